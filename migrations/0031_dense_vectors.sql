-- Optional dense retrieval (issue 25). An agent may name an embedding model (`anna agent set A
-- --embedding-model PROVIDER/MODEL`); the gateway's embedding worker then embeds the messages and
-- summaries of the agent's sessions in the background, and the ranked search fuses the nearest
-- neighbours of the query's vector with its lexical ranking (src/layers/memory/denseSearch.ts).
-- Without an embedding model nothing here is read or written.
ALTER TABLE agents ADD COLUMN embedding_provider_id TEXT;
--> statement-breakpoint
ALTER TABLE agents ADD COLUMN embedding_model TEXT NOT NULL DEFAULT '';
--> statement-breakpoint
-- One vector per (row, model): `model` is the agent's PROVIDER/MODEL as set, so a model change
-- leaves the old vectors unread (search and the worker read the current model's only). The vector
-- is `dims` float32 values, little-endian. `conversation_id` is the row's, copied so a scope's
-- vectors are read without a join to the rows; sessions moved to another user (user removal) keep
-- their conversation, so their vectors follow them. A rowid table (not WITHOUT ROWID): a search
-- orders the scope's keys by the covering index, then reads each vector by rowid — 7.5 ms for
-- 2,600 vectors of 256 dims, against 50 ms when the blobs went through the sort.
CREATE TABLE ctx_vectors (
  source TEXT NOT NULL CHECK (source IN ('message', 'summary')),
  row_id INTEGER NOT NULL,
  model TEXT NOT NULL,
  conversation_id INTEGER NOT NULL,
  dims INTEGER NOT NULL CHECK (dims > 0),
  vector BLOB NOT NULL CHECK (length(vector) = 4 * dims),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (source, row_id, model)
);
--> statement-breakpoint
CREATE INDEX ctx_vectors_scope ON ctx_vectors (model, conversation_id, row_id);
--> statement-breakpoint
-- A row's vectors go with it (a session deleted for good; compaction deletes no message).
CREATE TRIGGER ctx_vectors_message_delete AFTER DELETE ON ctx_messages
BEGIN
  DELETE FROM ctx_vectors WHERE source = 'message' AND row_id = old.id;
END;
--> statement-breakpoint
CREATE TRIGGER ctx_vectors_summary_delete AFTER DELETE ON ctx_summaries
BEGIN
  DELETE FROM ctx_vectors WHERE source = 'summary' AND row_id = old.id;
END;
--> statement-breakpoint
-- Embedding calls are model calls: they are recorded (tokens, failures) and count against the
-- agent's spend guard. SQLite cannot change a CHECK, so the usage table is built again with
-- 'embedding' among its purposes (same columns, rows and indexes).
CREATE TABLE model_usage_next (
  id INTEGER PRIMARY KEY,
  at INTEGER NOT NULL,
  provider_id TEXT NOT NULL,
  model TEXT NOT NULL,
  purpose TEXT NOT NULL CHECK (purpose IN ('chat', 'summary', 'embedding')),
  session_key TEXT NOT NULL DEFAULT '',
  agent_id TEXT NOT NULL DEFAULT '',
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens INTEGER NOT NULL DEFAULT 0,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  ok INTEGER NOT NULL DEFAULT 1,
  error TEXT NOT NULL DEFAULT '',
  user_id TEXT NOT NULL DEFAULT ''
);
--> statement-breakpoint
INSERT INTO model_usage_next (id, at, provider_id, model, purpose, session_key, agent_id, input_tokens, output_tokens,
  cache_read_tokens, cache_write_tokens, ok, error, user_id)
SELECT id, at, provider_id, model, purpose, session_key, agent_id, input_tokens, output_tokens,
  cache_read_tokens, cache_write_tokens, ok, error, user_id FROM model_usage;
--> statement-breakpoint
DROP TABLE model_usage;
--> statement-breakpoint
ALTER TABLE model_usage_next RENAME TO model_usage;
--> statement-breakpoint
CREATE INDEX model_usage_session ON model_usage (session_key, purpose, at);
--> statement-breakpoint
CREATE INDEX model_usage_at ON model_usage (at);
--> statement-breakpoint
CREATE INDEX model_usage_agent ON model_usage (agent_id, purpose, at);
