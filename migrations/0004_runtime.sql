-- Users, their API tokens, channels, group-chat bindings, the current context of each chat, settings,
-- and the agent settings the runtime needs (context budget, enabled tools, turn limit).

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL DEFAULT '',
  default_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
--> statement-breakpoint
-- A user as seen on a platform (telegram id 42, the local terminal, …).
CREATE TABLE user_identities (
  platform TEXT NOT NULL,
  external_id TEXT NOT NULL,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  PRIMARY KEY (platform, external_id)
) WITHOUT ROWID;
--> statement-breakpoint
-- Bearer tokens for the HTTP channel: only a SHA-256 of each token is stored.
CREATE TABLE user_tokens (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  label TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL
);
--> statement-breakpoint
CREATE TABLE channels (
  id TEXT PRIMARY KEY,
  enabled INTEGER NOT NULL DEFAULT 0,
  config TEXT NOT NULL DEFAULT '{}',
  updated_at INTEGER NOT NULL
);
--> statement-breakpoint
INSERT INTO channels (id, enabled, config, updated_at) VALUES ('http', 1, '{"host":"127.0.0.1","port":8787}', 0);
--> statement-breakpoint
-- Group chats bound to an agent.
CREATE TABLE chat_agents (
  platform TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  PRIMARY KEY (platform, chat_id)
) WITHOUT ROWID;
--> statement-breakpoint
-- The current session context of a (agent, platform, user, chat): /new moves it on, so old history
-- stays stored and searchable under its own session key.
CREATE TABLE chat_contexts (
  agent_id TEXT NOT NULL,
  platform TEXT NOT NULL,
  user_id TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  context TEXT NOT NULL,
  model TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (agent_id, platform, user_id, chat_id)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
--> statement-breakpoint
ALTER TABLE agents ADD COLUMN context_tokens INTEGER NOT NULL DEFAULT 0 CHECK (context_tokens >= 0);
--> statement-breakpoint
-- JSON array of enabled tool names; NULL = every tool available.
ALTER TABLE agents ADD COLUMN tools TEXT;
--> statement-breakpoint
ALTER TABLE agents ADD COLUMN max_turns INTEGER NOT NULL DEFAULT 25 CHECK (max_turns >= 1);
--> statement-breakpoint
ALTER TABLE model_usage ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
