-- The name an account logs in with (issue 24, "one person, one user"). Until now it was always the
-- user id; now an account may log in as NAME while belonging to another user: the terminal user
-- `u_k3x9…` who chats as `cli:NAME` (`anna chat` by the OS user NAME) gets the console account NAME
-- from `anna admin create NAME`, so the web chat and the terminal chat are one user with one
-- memory. Existing accounts log in as before: their login is their user id. Logins are unique.
ALTER TABLE accounts ADD COLUMN login TEXT NOT NULL DEFAULT '';
--> statement-breakpoint
UPDATE accounts SET login = user_id WHERE login = '';
--> statement-breakpoint
CREATE UNIQUE INDEX accounts_login ON accounts (login);
