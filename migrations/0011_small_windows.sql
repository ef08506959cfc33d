-- Memory that fits small context windows (issue 11).
--
-- An agent's output reserve: the output tokens asked of its model per call and kept free in the
-- context window. 0 = proportional to the window (a quarter of it, at most 8,192); a value set with
-- `anna agent set --max-output-tokens N` is used as it is, up to half the window.
ALTER TABLE agents ADD COLUMN max_output_tokens INTEGER NOT NULL DEFAULT 0 CHECK (max_output_tokens >= 0);
--> statement-breakpoint
-- Assembly reads the newest live items and every live summary; this index holds the summary items
-- (a handful per session, however long it is), so finding them does not scan the whole live context.
CREATE INDEX ctx_items_live_summaries ON ctx_items (conversation_id, position, summary_id, tokens, continues_unit, depth)
  WHERE summary_id IS NOT NULL;
