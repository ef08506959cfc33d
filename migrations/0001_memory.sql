-- Memory: conversations, raw messages (immutable), the summary DAG, the live context, FTS indexes.
-- Times are milliseconds since the Unix epoch. Statements are separated by statement-breakpoint
-- markers because node:sqlite runs only the first statement of a multi-statement string.

CREATE TABLE ctx_conversations (
  id INTEGER PRIMARY KEY,
  session_key TEXT NOT NULL UNIQUE,
  agent_id TEXT NOT NULL DEFAULT '',
  user_id TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  -- SessionManager metadata (title, model, …) as a JSON object.
  info TEXT NOT NULL DEFAULT '{}',
  -- ReviewSource: messages with seq <= reviewed_seq have been through self-improvement review.
  reviewed_seq INTEGER NOT NULL DEFAULT 0
);
--> statement-breakpoint
CREATE INDEX ctx_conversations_user ON ctx_conversations (user_id, agent_id);
--> statement-breakpoint
CREATE TABLE ctx_messages (
  id INTEGER PRIMARY KEY,
  conversation_id INTEGER NOT NULL REFERENCES ctx_conversations (id),
  seq INTEGER NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool_result')),
  -- Content as JSON (blocks, or a string with a lone surrogate that UTF-8 text cannot hold), or
  -- NULL when the content is a plain string (then it is `text`).
  blocks TEXT,
  -- Plain text: the content itself, or the searchable text extracted from the blocks.
  text TEXT NOT NULL,
  token_count INTEGER NOT NULL,
  has_tool_results INTEGER NOT NULL DEFAULT 0,
  -- 1 when this message carries tool results answering the message before it (same atomic unit).
  continues_unit INTEGER NOT NULL DEFAULT 0,
  has_cjk INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  UNIQUE (conversation_id, seq)
);
--> statement-breakpoint
-- Raw messages are never changed or deleted: that is what "lossless" rests on.
CREATE TRIGGER ctx_messages_immutable_update BEFORE UPDATE ON ctx_messages
BEGIN
  SELECT RAISE(ABORT, 'ctx_messages rows are immutable');
END;
--> statement-breakpoint
CREATE TRIGGER ctx_messages_immutable_delete BEFORE DELETE ON ctx_messages
BEGIN
  SELECT RAISE(ABORT, 'ctx_messages rows are immutable');
END;
--> statement-breakpoint
CREATE TABLE ctx_summaries (
  id INTEGER PRIMARY KEY,
  conversation_id INTEGER NOT NULL REFERENCES ctx_conversations (id),
  kind TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
  depth INTEGER NOT NULL CHECK (depth >= 0),
  -- How the text was produced: normal, aggressive, or truncated (deterministic fallback).
  mode TEXT NOT NULL CHECK (mode IN ('normal', 'aggressive', 'truncated')),
  content TEXT NOT NULL,
  token_count INTEGER NOT NULL,
  source_token_count INTEGER NOT NULL,
  -- Time range and seq range of all raw messages below this summary.
  earliest_at INTEGER NOT NULL,
  latest_at INTEGER NOT NULL,
  first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  has_cjk INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  CHECK ((kind = 'leaf') = (depth = 0))
);
--> statement-breakpoint
CREATE INDEX ctx_summaries_conversation ON ctx_summaries (conversation_id, depth);
--> statement-breakpoint
-- Leaf summary → the raw messages it summarizes, in order.
CREATE TABLE ctx_summary_messages (
  summary_id INTEGER NOT NULL REFERENCES ctx_summaries (id),
  message_id INTEGER NOT NULL REFERENCES ctx_messages (id),
  ord INTEGER NOT NULL,
  PRIMARY KEY (summary_id, ord)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX ctx_summary_messages_message ON ctx_summary_messages (message_id);
--> statement-breakpoint
-- DAG edges, named by direction: a condensed summary (the parent) → each constituent summary
-- (a child one level deeper down), in order. `expand` of a condensed summary follows
-- condensed_id → constituent_id.
CREATE TABLE ctx_summary_parents (
  condensed_id INTEGER NOT NULL REFERENCES ctx_summaries (id),
  constituent_id INTEGER NOT NULL REFERENCES ctx_summaries (id),
  ord INTEGER NOT NULL,
  PRIMARY KEY (condensed_id, ord),
  CHECK (condensed_id <> constituent_id)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE UNIQUE INDEX ctx_summary_parents_constituent ON ctx_summary_parents (constituent_id);
--> statement-breakpoint
-- The live context window, in position order: each item is one message or one summary.
-- `tokens`, `continues_unit` and `depth` are copied from the row so planning reads one table.
CREATE TABLE ctx_items (
  conversation_id INTEGER NOT NULL REFERENCES ctx_conversations (id),
  position INTEGER NOT NULL,
  message_id INTEGER REFERENCES ctx_messages (id),
  summary_id INTEGER REFERENCES ctx_summaries (id),
  tokens INTEGER NOT NULL,
  continues_unit INTEGER NOT NULL DEFAULT 0,
  depth INTEGER NOT NULL DEFAULT -1,
  PRIMARY KEY (conversation_id, position),
  CHECK ((message_id IS NULL) <> (summary_id IS NULL))
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE ctx_agent_memory (
  user_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  content TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (user_id, agent_id)
) WITHOUT ROWID;
--> statement-breakpoint
-- Full-text search. Porter/unicode61 indexes every row; the trigram index holds only rows with CJK
-- text (Chinese, Japanese, Korean have no spaces for unicode61 to split on).
CREATE VIRTUAL TABLE ctx_messages_fts USING fts5 (text, content = 'ctx_messages', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2');
--> statement-breakpoint
CREATE VIRTUAL TABLE ctx_messages_cjk USING fts5 (text, content = 'ctx_messages', content_rowid = 'id', tokenize = 'trigram');
--> statement-breakpoint
CREATE TRIGGER ctx_messages_fts_insert AFTER INSERT ON ctx_messages
BEGIN
  INSERT INTO ctx_messages_fts (rowid, text) VALUES (new.id, new.text);
END;
--> statement-breakpoint
CREATE TRIGGER ctx_messages_cjk_insert AFTER INSERT ON ctx_messages WHEN new.has_cjk = 1
BEGIN
  INSERT INTO ctx_messages_cjk (rowid, text) VALUES (new.id, new.text);
END;
--> statement-breakpoint
CREATE VIRTUAL TABLE ctx_summaries_fts USING fts5 (content, content = 'ctx_summaries', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2');
--> statement-breakpoint
CREATE VIRTUAL TABLE ctx_summaries_cjk USING fts5 (content, content = 'ctx_summaries', content_rowid = 'id', tokenize = 'trigram');
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_fts_insert AFTER INSERT ON ctx_summaries
BEGIN
  INSERT INTO ctx_summaries_fts (rowid, content) VALUES (new.id, new.content);
END;
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_cjk_insert AFTER INSERT ON ctx_summaries WHEN new.has_cjk = 1
BEGIN
  INSERT INTO ctx_summaries_cjk (rowid, content) VALUES (new.id, new.content);
END;
--> statement-breakpoint
-- Summaries are removed only when a whole session is deleted; keep the indexes in step.
CREATE TRIGGER ctx_summaries_fts_delete AFTER DELETE ON ctx_summaries
BEGIN
  INSERT INTO ctx_summaries_fts (ctx_summaries_fts, rowid, content) VALUES ('delete', old.id, old.content);
  INSERT INTO ctx_summaries_cjk (ctx_summaries_cjk, rowid, content) SELECT 'delete', old.id, old.content WHERE old.has_cjk = 1;
END;
--> statement-breakpoint
CREATE TABLE plugins (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  config TEXT NOT NULL DEFAULT '{}',
  updated_at INTEGER NOT NULL
);
--> statement-breakpoint
INSERT INTO plugins (id, kind, enabled, updated_at) VALUES
  ('memory/lcm', 'memory', 1, 0),
  ('memory/simple', 'memory', 0, 0);
