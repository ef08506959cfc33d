-- Removing a user for good (issue 23). A user id can be given again after its user was removed, so
-- what the old user leaves behind must not be reachable by the new one:
--
-- `users.uid` tells incarnations of one id apart: a random value each user gets when made (the
-- trigger below, so every way of inserting a user gives one). The running gateway compares it to
-- know that the alice writing now is not the alice its runner and cached conversation were for;
-- the data kept of a removed user is stored under `<id>~removed-<uid>`, an id no user can be given
-- (user ids are letters, digits, '.', '_' and '-').
--
-- `removed_users` records each removal: the id the kept data now carries, whether the sessions were
-- kept or deleted, and `finished_at` NULL while part of it is still to be done (a playbook file with
-- a mistake, say). Running `anna user remove` again finishes it; until then the id cannot be given
-- to a new user.
--
-- Removing a user moves the configuration version on, so a running gateway's watcher sees it at once
-- and ends that user's running turns and live runners.
ALTER TABLE users ADD COLUMN uid TEXT NOT NULL DEFAULT '';
--> statement-breakpoint
UPDATE users SET uid = lower(hex(randomblob(8))) WHERE uid = '';
--> statement-breakpoint
CREATE TRIGGER users_uid AFTER INSERT ON users WHEN new.uid = ''
BEGIN
  UPDATE users SET uid = lower(hex(randomblob(8))) WHERE id = new.id;
END;
--> statement-breakpoint
CREATE TABLE removed_users (
  removed_as TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  name TEXT NOT NULL,
  sessions TEXT NOT NULL CHECK (sessions IN ('keep', 'delete')),
  removed_at INTEGER NOT NULL,
  finished_at INTEGER
);
--> statement-breakpoint
CREATE UNIQUE INDEX removed_users_unfinished ON removed_users (user_id) WHERE finished_at IS NULL;
--> statement-breakpoint
CREATE TRIGGER config_version_users_delete AFTER DELETE ON users BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
