-- Search on PostgreSQL (issue 26): the counterpart of SQLite's FTS5 tables (migrations/0010, 0028),
-- one `tsvector` per message and per summary written by TypeScript from anna's own tokens
-- (src/domain/search/tsvector.ts: words at their positions, weight A for the text and B for the
-- memory tool's own calls and results, CJK letter pairs, and the scope tokens `#c<conversation>` and
-- `#u<hex of the user id>`), with a GIN index. Ranking stays in TypeScript, as on SQLite.
--
-- Every inserted row is queued in ctx_search_backlog unless its vector was written by the same
-- statement (an append writes both in one statement); the store indexes the queue inside the
-- transaction that inserted the rows, and drains what is left when it starts (rows `anna db copy`
-- inserted, for one). So a committed row is always in the index or in the queue.

CREATE TABLE ctx_messages_search (
  id BIGINT PRIMARY KEY,
  terms TSVECTOR NOT NULL
) WITH (toast_tuple_target = 128);
--> statement-breakpoint
ALTER TABLE ctx_messages_search ALTER COLUMN terms SET STORAGE EXTERNAL;
--> statement-breakpoint
CREATE INDEX ctx_messages_search_terms ON ctx_messages_search USING gin (terms) WITH (fastupdate = off);
--> statement-breakpoint
CREATE TABLE ctx_summaries_search (
  id BIGINT PRIMARY KEY,
  terms TSVECTOR NOT NULL
) WITH (toast_tuple_target = 128);
--> statement-breakpoint
ALTER TABLE ctx_summaries_search ALTER COLUMN terms SET STORAGE EXTERNAL;
--> statement-breakpoint
CREATE INDEX ctx_summaries_search_terms ON ctx_summaries_search USING gin (terms) WITH (fastupdate = off);
--> statement-breakpoint
CREATE TABLE ctx_search_backlog (
  source TEXT NOT NULL CHECK (source IN ('message', 'summary')),
  id BIGINT NOT NULL,
  PRIMARY KEY (source, id)
);
--> statement-breakpoint
CREATE FUNCTION anna_search_queue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_ARGV[0] = 'message' THEN
    IF NOT EXISTS (SELECT 1 FROM ctx_messages_search WHERE id = NEW.id) THEN
      INSERT INTO ctx_search_backlog (source, id) VALUES ('message', NEW.id) ON CONFLICT DO NOTHING;
    END IF;
  ELSIF NOT EXISTS (SELECT 1 FROM ctx_summaries_search WHERE id = NEW.id) THEN
    INSERT INTO ctx_search_backlog (source, id) VALUES ('summary', NEW.id) ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER ctx_messages_search_queue AFTER INSERT ON ctx_messages FOR EACH ROW EXECUTE FUNCTION anna_search_queue('message');
--> statement-breakpoint
CREATE TRIGGER ctx_summaries_search_queue AFTER INSERT ON ctx_summaries FOR EACH ROW EXECUTE FUNCTION anna_search_queue('summary');
--> statement-breakpoint
-- What goes with a deleted message or summary: its vectors, its search text and its index entry.
CREATE OR REPLACE FUNCTION anna_row_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM ctx_vectors WHERE source = TG_ARGV[0] AND row_id = OLD.id;
  DELETE FROM ctx_search_backlog WHERE source = TG_ARGV[0] AND id = OLD.id;
  IF TG_ARGV[0] = 'message' THEN
    DELETE FROM ctx_message_search_text WHERE message_id = OLD.id;
    DELETE FROM ctx_messages_search WHERE id = OLD.id;
  ELSE
    DELETE FROM ctx_summaries_search WHERE id = OLD.id;
  END IF;
  RETURN NULL;
END
$$;
