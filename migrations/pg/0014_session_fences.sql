-- Fences and turn ids of a cluster's sessions (issue 28); src/domain/cluster/fence.ts says why.
-- session_fences: the epoch a session's current owner took it at (by entity id, the SHA-256 of its
-- key). Moved on, under the memory store's write lock (6385239, as `immediate` takes it), each time
-- a node starts the session's entity; every fenced write checks it under the same lock.
CREATE TABLE session_fences (
  entity_id TEXT PRIMARY KEY,
  epoch BIGINT NOT NULL,
  node_id TEXT NOT NULL,
  taken_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
--> statement-breakpoint
-- session_turns: every turn id a session's owner started (a channel message's ledger key, an HTTP
-- Idempotency-Key, a job's run, or one made for the call): a turn delivered again — a caller's retry,
-- or effect/cluster re-sending it to a new owner — is then run as resumed (its stored answer given
-- again, or its stored message answered without storing it twice), never as a second turn.
-- Rows older than a day are deleted by the nodes.
CREATE TABLE session_turns (
  turn_id TEXT PRIMARY KEY,
  entity_id TEXT NOT NULL,
  node_id TEXT NOT NULL,
  started_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE INDEX session_turns_started ON session_turns (started_at);
--> statement-breakpoint
-- The one-round-trip append (0008) behind the fence: refused with SQLSTATE P0A01 when the session's
-- epoch is no longer `fence_epoch` (the advisory lock is the same one, taken first; it is re-entrant).
CREATE FUNCTION anna_append_fenced(
  fence_entity TEXT,
  fence_epoch BIGINT,
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
  IF NOT EXISTS (SELECT 1 FROM session_fences WHERE entity_id = fence_entity AND epoch = fence_epoch) THEN
    RAISE EXCEPTION 'anna: session fenced at epoch %', fence_epoch USING ERRCODE = 'P0A01';
  END IF;
  RETURN anna_append_messages(conv, expected_key, expected_user, expected_last, now_ms, seqs, roles, blocks, texts,
    tokens, tool_results, continues, cjk, created, vector_seqs, vectors);
END
$$;
