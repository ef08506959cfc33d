-- A turn's append in one round trip (issue 26). The append was five statements, each a round trip:
-- BEGIN, the write lock, a read of the conversation and its last message, the insert, COMMIT — most of
-- an appended message's cost on a network database. The store remembers each conversation's last
-- message after writing it, makes the rows from that, and calls this function, which takes the same
-- write lock (`Sqlite.WRITE_LOCK`, as `immediate` does), checks under it that the session is still
-- the one the store knows (its key and user) and that its last message is still `expected_last`, and only then writes
-- messages, context items, search vectors and the conversation's time. It returns false without
-- writing when either check fails (another process appended or deleted it meanwhile): the store then
-- reads again and appends the old way. Each statement of a plpgsql function reads a fresh snapshot in
-- READ COMMITTED, so the checks see every append that committed before the lock was granted.
-- Arrays, not JSON: a message's text reaches the server as the driver encodes text, as in the insert.
CREATE FUNCTION anna_append_messages(
  conv BIGINT,
  expected_key TEXT,
  expected_user TEXT,
  expected_last BIGINT,
  now_ms BIGINT,
  seqs BIGINT[],
  roles TEXT[],
  blocks TEXT[],
  texts TEXT[],
  tokens BIGINT[],
  tool_results INTEGER[],
  continues INTEGER[],
  cjk INTEGER[],
  created BIGINT[],
  vector_seqs BIGINT[],
  vectors TEXT[]
) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(6385239);
  IF NOT EXISTS (SELECT 1 FROM ctx_conversations WHERE id = conv AND session_key = expected_key AND user_id = expected_user AND deleting = 0) THEN
    RETURN FALSE;
  END IF;
  IF coalesce((SELECT seq FROM ctx_messages WHERE conversation_id = conv ORDER BY seq DESC LIMIT 1), 0) <> expected_last THEN
    RETURN FALSE;
  END IF;
  WITH m AS (
    INSERT INTO ctx_messages (conversation_id, seq, role, blocks, text, token_count, has_tool_results, continues_unit, has_cjk, created_at)
      SELECT conv, r.seq, r.role, nullif(r.blocks, ''), r.text, r.tokens, r.tool_results, r.continues, r.cjk, r.created
      FROM unnest(seqs, roles, blocks, texts, tokens, tool_results, continues, cjk, created)
        AS r(seq, role, blocks, text, tokens, tool_results, continues, cjk, created)
      ORDER BY r.seq
    RETURNING id, seq, token_count, continues_unit
  ), i AS (
    INSERT INTO ctx_items (conversation_id, position, message_id, summary_id, tokens, continues_unit, depth)
      SELECT conv, m.seq, m.id, NULL, m.token_count, m.continues_unit, -1 FROM m
  ), s AS (
    INSERT INTO ctx_messages_search (id, terms)
      SELECT m.id, CAST(v.terms AS tsvector) FROM m JOIN unnest(vector_seqs, vectors) AS v(seq, terms) ON v.seq = m.seq
  )
  UPDATE ctx_conversations SET updated_at = now_ms WHERE id = conv;
  RETURN TRUE;
END
$$;
