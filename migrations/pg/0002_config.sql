-- PostgreSQL (issue 26, in progress): configuration and identity, as the SQLite migrations up to
-- 0031 leave them — agents, users and their identities and tokens, accounts and browser sessions,
-- channels, chat bindings and choices, settings, plugins. `rowid` is an identity column where the
-- stores order by SQLite's rowid (insertion order). Changes to what the live configuration reads
-- bump config_version and notify `anna_config` (0001's anna_config_changed).
CREATE TABLE agents (
  id TEXT PRIMARY KEY CHECK (id <> '' AND strpos(id, ':') = 0),
  rowid BIGINT GENERATED ALWAYS AS IDENTITY,
  name TEXT NOT NULL,
  provider_id TEXT REFERENCES providers (id),
  model TEXT NOT NULL DEFAULT '',
  summary_provider_id TEXT REFERENCES providers (id),
  summary_model TEXT NOT NULL DEFAULT '',
  summary_max_calls INTEGER NOT NULL DEFAULT 60 CHECK (summary_max_calls >= 0),
  summary_window_seconds INTEGER NOT NULL DEFAULT 3600 CHECK (summary_window_seconds > 0),
  system_prompt TEXT NOT NULL DEFAULT '',
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  sandbox_image TEXT NOT NULL DEFAULT '',
  sandbox_network TEXT NOT NULL DEFAULT 'disabled' CHECK (sandbox_network IN ('disabled', 'allow_all')),
  sandbox_memory_mb INTEGER NOT NULL DEFAULT 1024 CHECK (sandbox_memory_mb >= 16),
  sandbox_cpus DOUBLE PRECISION NOT NULL DEFAULT 1 CHECK (sandbox_cpus > 0),
  sandbox_pids INTEGER NOT NULL DEFAULT 256 CHECK (sandbox_pids >= 8),
  context_tokens INTEGER NOT NULL DEFAULT 0 CHECK (context_tokens >= 0),
  tools TEXT,
  max_turns INTEGER NOT NULL DEFAULT 25 CHECK (max_turns >= 1),
  sandbox_workspace TEXT NOT NULL DEFAULT 'user' CHECK (sandbox_workspace IN ('user', 'shared')),
  sandbox_disk_mb INTEGER NOT NULL DEFAULT 1024 CHECK (sandbox_disk_mb >= 1),
  allowed_models TEXT NOT NULL DEFAULT '[]',
  turn_timeout_seconds INTEGER NOT NULL DEFAULT 900 CHECK (turn_timeout_seconds >= 1),
  awaiting_model INTEGER NOT NULL DEFAULT 0 CHECK (awaiting_model IN (0, 1)),
  max_output_tokens INTEGER NOT NULL DEFAULT 0 CHECK (max_output_tokens >= 0),
  access TEXT NOT NULL DEFAULT '{"kind":"everyone"}',
  embedding_provider_id TEXT,
  embedding_model TEXT NOT NULL DEFAULT ''
);
--> statement-breakpoint
CREATE TRIGGER config_version_agents AFTER INSERT OR UPDATE OR DELETE ON agents
  FOR EACH ROW EXECUTE FUNCTION anna_config_changed();
--> statement-breakpoint
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL DEFAULT '',
  default_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  attributes TEXT NOT NULL DEFAULT '{}',
  uid TEXT NOT NULL DEFAULT ''
);
--> statement-breakpoint
-- A user's stable random id (16 hex digits), as SQLite's users_uid trigger gives it.
CREATE FUNCTION anna_user_uid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.uid = '' THEN NEW.uid := substr(replace(gen_random_uuid()::text, '-', ''), 1, 16); END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER users_uid BEFORE INSERT ON users FOR EACH ROW EXECUTE FUNCTION anna_user_uid();
--> statement-breakpoint
CREATE TRIGGER config_version_users AFTER DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION anna_config_changed();
--> statement-breakpoint
CREATE TABLE user_identities (
  platform TEXT NOT NULL,
  external_id TEXT NOT NULL,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  last_seen_at BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (platform, external_id)
);
--> statement-breakpoint
CREATE TABLE user_tokens (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  label TEXT NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  role TEXT NOT NULL DEFAULT 'user' CHECK (role IN ('admin', 'user'))
);
--> statement-breakpoint
CREATE TABLE token_lineage (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  minted_by TEXT,
  created_at BIGINT NOT NULL
);
--> statement-breakpoint
CREATE INDEX token_lineage_minted_by ON token_lineage (minted_by);
--> statement-breakpoint
CREATE TABLE removed_users (
  removed_as TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  name TEXT NOT NULL,
  sessions TEXT NOT NULL CHECK (sessions IN ('keep', 'delete')),
  removed_at BIGINT NOT NULL,
  finished_at BIGINT
);
--> statement-breakpoint
CREATE UNIQUE INDEX removed_users_unfinished ON removed_users (user_id) WHERE finished_at IS NULL;
--> statement-breakpoint
CREATE TABLE accounts (
  user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('admin', 'user')),
  password_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  password_changed_at BIGINT NOT NULL,
  login TEXT NOT NULL DEFAULT ''
);
--> statement-breakpoint
CREATE UNIQUE INDEX accounts_login ON accounts (login);
--> statement-breakpoint
CREATE TABLE web_sessions (
  id TEXT PRIMARY KEY,
  rowid BIGINT GENERATED ALWAYS AS IDENTITY,
  token_hash TEXT NOT NULL UNIQUE,
  user_id TEXT NOT NULL REFERENCES accounts (user_id) ON DELETE CASCADE,
  csrf_token TEXT NOT NULL,
  client TEXT NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
--> statement-breakpoint
CREATE INDEX web_sessions_user ON web_sessions (user_id);
--> statement-breakpoint
CREATE TABLE login_failures (
  kind TEXT NOT NULL CHECK (kind IN ('pair', 'address')),
  username TEXT NOT NULL,
  address TEXT NOT NULL,
  failures INTEGER NOT NULL,
  last_failure_at BIGINT NOT NULL,
  PRIMARY KEY (kind, username, address)
);
--> statement-breakpoint
CREATE INDEX login_failures_age ON login_failures (last_failure_at);
--> statement-breakpoint
CREATE TABLE channels (
  id TEXT PRIMARY KEY,
  enabled INTEGER NOT NULL DEFAULT 0,
  config TEXT NOT NULL DEFAULT '{}',
  updated_at BIGINT NOT NULL
);
--> statement-breakpoint
CREATE TRIGGER config_version_channels AFTER INSERT OR UPDATE OR DELETE ON channels
  FOR EACH ROW EXECUTE FUNCTION anna_config_changed();
--> statement-breakpoint
CREATE TABLE chat_agents (
  platform TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  PRIMARY KEY (platform, chat_id)
);
--> statement-breakpoint
CREATE TRIGGER config_version_chat_agents AFTER INSERT OR UPDATE OR DELETE ON chat_agents
  FOR EACH ROW EXECUTE FUNCTION anna_config_changed();
--> statement-breakpoint
CREATE TABLE chat_agent_choices (
  platform TEXT NOT NULL,
  user_id TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  PRIMARY KEY (platform, user_id, chat_id)
);
--> statement-breakpoint
CREATE TABLE chat_contexts (
  agent_id TEXT NOT NULL,
  platform TEXT NOT NULL,
  user_id TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  context TEXT NOT NULL,
  model TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (agent_id, platform, user_id, chat_id)
);
--> statement-breakpoint
CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
--> statement-breakpoint
CREATE TRIGGER config_version_settings AFTER INSERT OR UPDATE OR DELETE ON settings
  FOR EACH ROW EXECUTE FUNCTION anna_config_changed();
--> statement-breakpoint
CREATE TABLE plugins (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  config TEXT NOT NULL DEFAULT '{}',
  updated_at BIGINT NOT NULL
);
--> statement-breakpoint
CREATE TRIGGER config_version_plugins AFTER INSERT OR UPDATE OR DELETE ON plugins
  FOR EACH ROW EXECUTE FUNCTION anna_config_changed();
--> statement-breakpoint
CREATE TABLE agent_plugins (
  agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  plugin_id TEXT NOT NULL REFERENCES plugins (id) ON DELETE CASCADE,
  enabled INTEGER,
  config TEXT NOT NULL DEFAULT '{}',
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (agent_id, plugin_id)
);
--> statement-breakpoint
CREATE TRIGGER config_version_agent_plugins AFTER INSERT OR UPDATE OR DELETE ON agent_plugins
  FOR EACH ROW EXECUTE FUNCTION anna_config_changed();
--> statement-breakpoint
-- What the SQLite migrations seed: the plugins (memory/lcm the memory plugin) and the HTTP channel.
INSERT INTO plugins (id, kind, enabled, updated_at) VALUES
  ('memory/lcm', 'memory', 1, 0), ('memory/simple', 'memory', 0, 0), ('mcp', 'tool', 1, 0),
  ('webfetch', 'tool', 1, 0), ('learning', 'learning', 1, 0);
--> statement-breakpoint
INSERT INTO channels (id, enabled, config, updated_at) VALUES ('http', 1, '{"host":"127.0.0.1","port":8787}', 0);
