-- Inserted rows are counted and queued for the search index once per statement, not once per row
-- (issue 26): appending 1,000 messages ran the two row triggers 2,000 times (about a third of the
-- statement), and each counted row added a version of its conversation's one counter row. The
-- inserted rows are read from the statement's transition table `anna_inserted`. Deletes stay per row.
CREATE OR REPLACE FUNCTION anna_search_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_LEVEL = 'STATEMENT' THEN
    INSERT INTO ctx_search_counts (conversation_id, source, n)
      SELECT conversation_id, TG_ARGV[0], count(*) FROM anna_inserted GROUP BY conversation_id
    ON CONFLICT (conversation_id, source) DO UPDATE SET n = ctx_search_counts.n + EXCLUDED.n;
    RETURN NULL;
  END IF;
  UPDATE ctx_search_counts SET n = n - 1 WHERE conversation_id = OLD.conversation_id AND source = TG_ARGV[0];
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION anna_search_queue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_ARGV[0] = 'message' THEN
    INSERT INTO ctx_search_backlog (source, id)
      SELECT 'message', r.id FROM anna_inserted r WHERE NOT EXISTS (SELECT 1 FROM ctx_messages_search s WHERE s.id = r.id)
    ON CONFLICT DO NOTHING;
  ELSE
    INSERT INTO ctx_search_backlog (source, id)
      SELECT 'summary', r.id FROM anna_inserted r WHERE NOT EXISTS (SELECT 1 FROM ctx_summaries_search s WHERE s.id = r.id)
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER ctx_messages_count ON ctx_messages;
--> statement-breakpoint
DROP TRIGGER ctx_summaries_count ON ctx_summaries;
--> statement-breakpoint
DROP TRIGGER ctx_messages_search_queue ON ctx_messages;
--> statement-breakpoint
DROP TRIGGER ctx_summaries_search_queue ON ctx_summaries;
--> statement-breakpoint
CREATE TRIGGER ctx_messages_count AFTER INSERT ON ctx_messages REFERENCING NEW TABLE AS anna_inserted
  FOR EACH STATEMENT EXECUTE FUNCTION anna_search_count('message');
--> statement-breakpoint
CREATE TRIGGER ctx_messages_uncount AFTER DELETE ON ctx_messages FOR EACH ROW EXECUTE FUNCTION anna_search_count('message');
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_count AFTER INSERT ON ctx_summaries REFERENCING NEW TABLE AS anna_inserted
  FOR EACH STATEMENT EXECUTE FUNCTION anna_search_count('summary');
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_uncount AFTER DELETE ON ctx_summaries FOR EACH ROW EXECUTE FUNCTION anna_search_count('summary');
--> statement-breakpoint
CREATE TRIGGER ctx_messages_search_queue AFTER INSERT ON ctx_messages REFERENCING NEW TABLE AS anna_inserted
  FOR EACH STATEMENT EXECUTE FUNCTION anna_search_queue('message');
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_search_queue AFTER INSERT ON ctx_summaries REFERENCING NEW TABLE AS anna_inserted
  FOR EACH STATEMENT EXECUTE FUNCTION anna_search_queue('summary');
