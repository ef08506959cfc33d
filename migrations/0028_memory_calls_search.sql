-- Search leaves the memory tool's own calls and results out (issue 24): a model searching its memory
-- writes the query's words into the conversation (`[tool call memory] {"action":"search",…}`) and
-- gets snippets holding them back, so every earlier search for a question outranked its answer. The
-- full-text indexes get two columns more: `memory` and `memory_cjk` hold the text of the memory
-- tool's calls and of the results answering them (cut as `body` and `cjk` are), `body` and `cjk` the
-- rest of the message. A search reads the new columns only when asked to (src/domain/search/
-- memoryCalls.ts, query.ts). Summaries get the same columns, always empty, so one query serves both.
--
-- Which blocks are the memory tool's is known from the message's JSON blocks (and, for results,
-- from the call ids of the message they answer): TypeScript's job. The insert trigger indexes in SQL
-- only the rows that cannot hold any (no CJK letters, no memory call in them or in the assistant
-- message they answer); the others go through ctx_search_backlog, as rows with CJK letters already
-- did (src/layers/memory/searchIndex.ts, which also writes ctx_message_search_text).
--
-- The raw messages are not touched. FTS5 tables cannot gain columns, so both indexes are built again
-- on the first start after the upgrade: 4.4 s for the bench's 100,000 messages (5.4 % of them with
-- memory calls or results) on a loaded 2-core machine, so count on a minute or so per million.

DROP TRIGGER ctx_messages_search_insert;
--> statement-breakpoint
DROP TRIGGER ctx_messages_search_queue;
--> statement-breakpoint
DROP TRIGGER ctx_messages_search_delete;
--> statement-breakpoint
DROP TRIGGER ctx_summaries_search_insert;
--> statement-breakpoint
DROP TRIGGER ctx_summaries_search_queue;
--> statement-breakpoint
DROP TRIGGER ctx_summaries_search_delete;
--> statement-breakpoint
DROP TABLE ctx_messages_search;
--> statement-breakpoint
DROP TABLE ctx_summaries_search;
--> statement-breakpoint
CREATE VIRTUAL TABLE ctx_messages_search USING fts5 (
  body, cjk, scope, memory, memory_cjk,
  content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2'
);
--> statement-breakpoint
CREATE VIRTUAL TABLE ctx_summaries_search USING fts5 (
  body, cjk, scope, memory, memory_cjk,
  content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2'
);
--> statement-breakpoint
-- The searchable text of a message that holds memory tool calls or results: the message's text
-- without them ('' when it is nothing else). Search ranks it and cuts its snippets from it.
CREATE TABLE ctx_message_search_text (
  message_id INTEGER PRIMARY KEY,
  body TEXT NOT NULL
);
--> statement-breakpoint
-- `new` may hold a memory tool call, or results answering one (the same condition as
-- searchIndex.ts's mayHoldMemoryCallsSql; never NULL, so the two triggers below never both miss).
CREATE TRIGGER ctx_messages_search_insert AFTER INSERT ON ctx_messages
WHEN new.has_cjk = 0 AND NOT (new.blocks IS NOT NULL AND (instr(new.text, '[tool call memory] ') > 0 OR (new.has_tool_results = 1
  AND coalesce(instr((SELECT p.text FROM ctx_messages p WHERE p.conversation_id = new.conversation_id AND p.seq < new.seq
    AND p.role = 'assistant' ORDER BY p.seq DESC LIMIT 1), '[tool call memory] '), 0) > 0)))
BEGIN
  INSERT INTO ctx_messages_search (rowid, body, cjk, scope, memory, memory_cjk)
  SELECT new.id, new.text, '', 'c' || c.id ||
    CASE WHEN length(CAST(c.user_id AS BLOB)) <= 64 THEN ' u' || lower(hex(c.user_id)) || '0' ELSE '' END, '', ''
  FROM ctx_conversations c WHERE c.id = new.conversation_id;
END;
--> statement-breakpoint
CREATE TRIGGER ctx_messages_search_queue AFTER INSERT ON ctx_messages
WHEN new.has_cjk = 1 OR (new.blocks IS NOT NULL AND (instr(new.text, '[tool call memory] ') > 0 OR (new.has_tool_results = 1
  AND coalesce(instr((SELECT p.text FROM ctx_messages p WHERE p.conversation_id = new.conversation_id AND p.seq < new.seq
    AND p.role = 'assistant' ORDER BY p.seq DESC LIMIT 1), '[tool call memory] '), 0) > 0)))
BEGIN
  INSERT INTO ctx_search_backlog (source, id) VALUES ('message', new.id);
END;
--> statement-breakpoint
CREATE TRIGGER ctx_messages_search_delete AFTER DELETE ON ctx_messages
BEGIN
  DELETE FROM ctx_messages_search WHERE rowid = old.id;
  DELETE FROM ctx_search_backlog WHERE source = 'message' AND id = old.id;
  DELETE FROM ctx_message_search_text WHERE message_id = old.id;
END;
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_search_insert AFTER INSERT ON ctx_summaries WHEN new.has_cjk = 0
BEGIN
  INSERT INTO ctx_summaries_search (rowid, body, cjk, scope, memory, memory_cjk)
  SELECT new.id, new.content, '', 'c' || c.id ||
    CASE WHEN length(CAST(c.user_id AS BLOB)) <= 64 THEN ' u' || lower(hex(c.user_id)) || '0' ELSE '' END, '', ''
  FROM ctx_conversations c WHERE c.id = new.conversation_id;
END;
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_search_queue AFTER INSERT ON ctx_summaries WHEN new.has_cjk = 1
BEGIN
  INSERT INTO ctx_search_backlog (source, id) VALUES ('summary', new.id);
END;
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_search_delete AFTER DELETE ON ctx_summaries
BEGIN
  DELETE FROM ctx_summaries_search WHERE rowid = old.id;
  DELETE FROM ctx_search_backlog WHERE source = 'summary' AND id = old.id;
END;
--> statement-breakpoint
-- Backfill: the rows SQL can index now; the others (and those queued already) through the backlog.
INSERT OR IGNORE INTO ctx_search_backlog (source, id)
SELECT 'message', m.id FROM ctx_messages m
WHERE m.has_cjk = 1 OR (m.blocks IS NOT NULL AND (instr(m.text, '[tool call memory] ') > 0 OR (m.has_tool_results = 1
  AND coalesce(instr((SELECT p.text FROM ctx_messages p WHERE p.conversation_id = m.conversation_id AND p.seq < m.seq
    AND p.role = 'assistant' ORDER BY p.seq DESC LIMIT 1), '[tool call memory] '), 0) > 0)));
--> statement-breakpoint
INSERT INTO ctx_messages_search (rowid, body, cjk, scope, memory, memory_cjk)
SELECT m.id, m.text, '', 'c' || c.id ||
  CASE WHEN length(CAST(c.user_id AS BLOB)) <= 64 THEN ' u' || lower(hex(c.user_id)) || '0' ELSE '' END, '', ''
FROM ctx_messages m JOIN ctx_conversations c ON c.id = m.conversation_id
WHERE NOT EXISTS (SELECT 1 FROM ctx_search_backlog b WHERE b.source = 'message' AND b.id = m.id)
ORDER BY m.id;
--> statement-breakpoint
INSERT OR IGNORE INTO ctx_search_backlog (source, id) SELECT 'summary', id FROM ctx_summaries WHERE has_cjk = 1;
--> statement-breakpoint
INSERT INTO ctx_summaries_search (rowid, body, cjk, scope, memory, memory_cjk)
SELECT s.id, s.content, '', 'c' || c.id ||
  CASE WHEN length(CAST(c.user_id AS BLOB)) <= 64 THEN ' u' || lower(hex(c.user_id)) || '0' ELSE '' END, '', ''
FROM ctx_summaries s JOIN ctx_conversations c ON c.id = s.conversation_id
WHERE NOT EXISTS (SELECT 1 FROM ctx_search_backlog b WHERE b.source = 'summary' AND b.id = s.id)
ORDER BY s.id;
