-- Search costs the same in a session of any size (issue 25): a term's idf needs the number of rows
-- in the search's scope, which search counted on every query from the index (every row of a
-- 100k-message session: 7 ms). The numbers are now kept here, per conversation and source, by the
-- triggers below, so a session's search reads one row and a user's sums one row per conversation
-- (src/layers/memory/memorySearch.ts). A conversation's rows go with it (ON DELETE CASCADE); moving
-- a conversation to another user (src/layers/memory/retireUser.ts) changes nothing here, since a
-- user's total is summed over the conversations that are theirs when searched.
--
-- Rows are only ever inserted, or deleted with their whole session (migrations/0006), so an insert
-- and a delete trigger per source keep the numbers exact.

CREATE TABLE ctx_search_counts (
  conversation_id INTEGER NOT NULL REFERENCES ctx_conversations (id) ON DELETE CASCADE,
  source TEXT NOT NULL CHECK (source IN ('message', 'summary')),
  n INTEGER NOT NULL,
  PRIMARY KEY (conversation_id, source)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TRIGGER ctx_messages_count_insert AFTER INSERT ON ctx_messages
BEGIN
  INSERT INTO ctx_search_counts (conversation_id, source, n) VALUES (new.conversation_id, 'message', 1)
  ON CONFLICT (conversation_id, source) DO UPDATE SET n = n + 1;
END;
--> statement-breakpoint
CREATE TRIGGER ctx_messages_count_delete AFTER DELETE ON ctx_messages
BEGIN
  UPDATE ctx_search_counts SET n = n - 1 WHERE conversation_id = old.conversation_id AND source = 'message';
END;
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_count_insert AFTER INSERT ON ctx_summaries
BEGIN
  INSERT INTO ctx_search_counts (conversation_id, source, n) VALUES (new.conversation_id, 'summary', 1)
  ON CONFLICT (conversation_id, source) DO UPDATE SET n = n + 1;
END;
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_count_delete AFTER DELETE ON ctx_summaries
BEGIN
  UPDATE ctx_search_counts SET n = n - 1 WHERE conversation_id = old.conversation_id AND source = 'summary';
END;
--> statement-breakpoint
-- Backfill from the (conversation_id, seq) and (conversation_id, depth) indexes.
INSERT INTO ctx_search_counts (conversation_id, source, n)
SELECT conversation_id, 'message', count(*) FROM ctx_messages GROUP BY conversation_id;
--> statement-breakpoint
INSERT INTO ctx_search_counts (conversation_id, source, n)
SELECT conversation_id, 'summary', count(*) FROM ctx_summaries GROUP BY conversation_id;
