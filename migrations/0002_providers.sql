-- Model providers, agents (with their model tiers and summarization spend guard), and the usage
-- of every model call.

CREATE TABLE providers (
  id TEXT PRIMARY KEY CHECK (id <> '' AND instr(id, '/') = 0),
  type TEXT NOT NULL CHECK (type IN ('anthropic', 'openai', 'openai-response')),
  -- Empty: the provider's public endpoint.
  base_url TEXT NOT NULL DEFAULT '',
  api_key TEXT NOT NULL DEFAULT '',
  -- JSON array of model ids the user declared.
  models TEXT NOT NULL DEFAULT '[]',
  default_model TEXT NOT NULL,
  -- JSON object of extra HTTP headers.
  headers TEXT NOT NULL DEFAULT '{}',
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
--> statement-breakpoint
CREATE TABLE agents (
  id TEXT PRIMARY KEY CHECK (id <> '' AND instr(id, ':') = 0),
  name TEXT NOT NULL,
  -- The main model: provider and model id ('' = the provider's default model).
  provider_id TEXT REFERENCES providers (id),
  model TEXT NOT NULL DEFAULT '',
  -- Optional cheaper tier for summaries and background work.
  summary_provider_id TEXT REFERENCES providers (id),
  summary_model TEXT NOT NULL DEFAULT '',
  -- Spend guard: at most this many summarizer calls per session per window.
  summary_max_calls INTEGER NOT NULL DEFAULT 60 CHECK (summary_max_calls >= 0),
  summary_window_seconds INTEGER NOT NULL DEFAULT 3600 CHECK (summary_window_seconds > 0),
  system_prompt TEXT NOT NULL DEFAULT '',
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
--> statement-breakpoint
CREATE TABLE model_usage (
  id INTEGER PRIMARY KEY,
  at INTEGER NOT NULL,
  provider_id TEXT NOT NULL,
  model TEXT NOT NULL,
  purpose TEXT NOT NULL CHECK (purpose IN ('chat', 'summary')),
  session_key TEXT NOT NULL DEFAULT '',
  agent_id TEXT NOT NULL DEFAULT '',
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens INTEGER NOT NULL DEFAULT 0,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  -- 0 when the call failed (it still counts against the spend guard).
  ok INTEGER NOT NULL DEFAULT 1,
  error TEXT NOT NULL DEFAULT ''
);
--> statement-breakpoint
CREATE INDEX model_usage_session ON model_usage (session_key, purpose, at);
