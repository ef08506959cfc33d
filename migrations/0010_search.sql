-- Search that answers questions (issue 11): one full-text index per source (messages, summaries)
-- that also knows each row's scope, so a session's or a user's search reads only its own matches,
-- and that cuts Chinese, Japanese and Korean text into letters and letter pairs, so words of one or
-- two characters are index lookups (the trigram index could not look up anything shorter than 3).
--
-- Columns (src/domain/search/text.ts): `body` is the text (with CJK letters spaced out in rows that
-- have them, so `FACT-9648` glued to Chinese is a word of its own), `cjk` the bigrams of each CJK
-- run, `scope` the tokens `c<conversation id>` and `u<hex of the user id>0` (user ids up to 64
-- bytes; the trailing 0 keeps porter from stemming the token). Contentless (the text stays in
-- ctx_messages / ctx_summaries only) with contentless_delete, so a row leaves the index by rowid.
--
-- Rows without CJK letters are indexed here and by the insert triggers, in SQL. Rows with CJK
-- letters need the cutting done in TypeScript: the trigger queues them in ctx_search_backlog and the
-- store indexes the queue in the same transaction as the insert (and on start, for the rows queued
-- here). The immutability and deletion triggers of 0001/0006 stay as they were.

DROP TRIGGER ctx_messages_fts_insert;
--> statement-breakpoint
DROP TRIGGER ctx_messages_cjk_insert;
--> statement-breakpoint
DROP TRIGGER ctx_messages_fts_delete;
--> statement-breakpoint
DROP TRIGGER ctx_summaries_fts_insert;
--> statement-breakpoint
DROP TRIGGER ctx_summaries_cjk_insert;
--> statement-breakpoint
DROP TRIGGER ctx_summaries_fts_delete;
--> statement-breakpoint
DROP TABLE ctx_messages_fts;
--> statement-breakpoint
DROP TABLE ctx_messages_cjk;
--> statement-breakpoint
DROP TABLE ctx_summaries_fts;
--> statement-breakpoint
DROP TABLE ctx_summaries_cjk;
--> statement-breakpoint
CREATE VIRTUAL TABLE ctx_messages_search USING fts5 (
  body, cjk, scope,
  content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2'
);
--> statement-breakpoint
CREATE VIRTUAL TABLE ctx_summaries_search USING fts5 (
  body, cjk, scope,
  content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2'
);
--> statement-breakpoint
-- Rows with CJK letters waiting for the store to index them (normally only inside the transaction
-- that inserted them).
CREATE TABLE ctx_search_backlog (
  source TEXT NOT NULL CHECK (source IN ('message', 'summary')),
  id INTEGER NOT NULL,
  PRIMARY KEY (source, id)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TRIGGER ctx_messages_search_insert AFTER INSERT ON ctx_messages WHEN new.has_cjk = 0
BEGIN
  INSERT INTO ctx_messages_search (rowid, body, cjk, scope)
  SELECT new.id, new.text, '', 'c' || c.id ||
    CASE WHEN length(CAST(c.user_id AS BLOB)) <= 64 THEN ' u' || lower(hex(c.user_id)) || '0' ELSE '' END
  FROM ctx_conversations c WHERE c.id = new.conversation_id;
END;
--> statement-breakpoint
CREATE TRIGGER ctx_messages_search_queue AFTER INSERT ON ctx_messages WHEN new.has_cjk = 1
BEGIN
  INSERT INTO ctx_search_backlog (source, id) VALUES ('message', new.id);
END;
--> statement-breakpoint
-- Deletion (a whole session, `anna memory delete`; see 0006) takes the row out of the index.
CREATE TRIGGER ctx_messages_search_delete AFTER DELETE ON ctx_messages
BEGIN
  DELETE FROM ctx_messages_search WHERE rowid = old.id;
  DELETE FROM ctx_search_backlog WHERE source = 'message' AND id = old.id;
END;
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_search_insert AFTER INSERT ON ctx_summaries WHEN new.has_cjk = 0
BEGIN
  INSERT INTO ctx_summaries_search (rowid, body, cjk, scope)
  SELECT new.id, new.content, '', 'c' || c.id ||
    CASE WHEN length(CAST(c.user_id AS BLOB)) <= 64 THEN ' u' || lower(hex(c.user_id)) || '0' ELSE '' END
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
-- Backfill: rows without CJK letters now, the others through the backlog.
INSERT INTO ctx_messages_search (rowid, body, cjk, scope)
SELECT m.id, m.text, '', 'c' || c.id ||
  CASE WHEN length(CAST(c.user_id AS BLOB)) <= 64 THEN ' u' || lower(hex(c.user_id)) || '0' ELSE '' END
FROM ctx_messages m JOIN ctx_conversations c ON c.id = m.conversation_id
WHERE m.has_cjk = 0
ORDER BY m.id;
--> statement-breakpoint
INSERT INTO ctx_search_backlog (source, id) SELECT 'message', id FROM ctx_messages WHERE has_cjk = 1;
--> statement-breakpoint
INSERT INTO ctx_summaries_search (rowid, body, cjk, scope)
SELECT s.id, s.content, '', 'c' || c.id ||
  CASE WHEN length(CAST(c.user_id AS BLOB)) <= 64 THEN ' u' || lower(hex(c.user_id)) || '0' ELSE '' END
FROM ctx_summaries s JOIN ctx_conversations c ON c.id = s.conversation_id
WHERE s.has_cjk = 0
ORDER BY s.id;
--> statement-breakpoint
INSERT INTO ctx_search_backlog (source, id) SELECT 'summary', id FROM ctx_summaries WHERE has_cjk = 1;
