-- Deliberate deletion of a whole session (`anna memory delete`, `anna user remove --delete-sessions`).
-- Raw messages stay immutable: the DELETE trigger now lets a message go only while its conversation
-- is marked `deleting`, which the deletion sets, uses and removes (with the conversation) in one
-- transaction. An accidental `DELETE FROM ctx_messages` is still refused, and `anna memory verify`
-- reports a conversation left marked.

ALTER TABLE ctx_conversations ADD COLUMN deleting INTEGER NOT NULL DEFAULT 0 CHECK (deleting IN (0, 1));
--> statement-breakpoint
DROP TRIGGER ctx_messages_immutable_delete;
--> statement-breakpoint
CREATE TRIGGER ctx_messages_immutable_delete BEFORE DELETE ON ctx_messages
WHEN NOT EXISTS (SELECT 1 FROM ctx_conversations c WHERE c.id = old.conversation_id AND c.deleting = 1)
BEGIN
  SELECT RAISE(ABORT, 'ctx_messages rows are immutable');
END;
--> statement-breakpoint
-- Keep the external-content search indexes in step when a session's messages are deleted.
CREATE TRIGGER ctx_messages_fts_delete AFTER DELETE ON ctx_messages
BEGIN
  INSERT INTO ctx_messages_fts (ctx_messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
  INSERT INTO ctx_messages_cjk (ctx_messages_cjk, rowid, text) SELECT 'delete', old.id, old.text WHERE old.has_cjk = 1;
END;
