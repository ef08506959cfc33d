-- Accounts and roles (issue 13; src/services/Accounts.ts): who may log in to the admin API and the
-- web console, and as what. An account belongs to a user; its password is stored as a scrypt hash
-- (`scrypt$N$r$p$salt$hash`). Browser sessions keep only the SHA-256 of their cookie value, and go
-- with their account (which goes with its user). None of this is agent configuration, so
-- config_version does not move.
CREATE TABLE accounts (
  user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('admin', 'user')),
  password_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  password_changed_at INTEGER NOT NULL
);
--> statement-breakpoint
CREATE TABLE web_sessions (
  -- The public id operators see and revoke by; never the cookie.
  id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  user_id TEXT NOT NULL REFERENCES accounts (user_id) ON DELETE CASCADE,
  csrf_token TEXT NOT NULL,
  client TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
--> statement-breakpoint
CREATE INDEX web_sessions_user ON web_sessions (user_id);
--> statement-breakpoint
-- The role an API token acts as at most (its account's role caps it at the time of use).
ALTER TABLE user_tokens ADD COLUMN role TEXT NOT NULL DEFAULT 'user' CHECK (role IN ('admin', 'user'));
