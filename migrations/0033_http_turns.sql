-- Idempotent HTTP turns (issue 28, "turns are idempotent"): a request to the HTTP channel with an
-- `Idempotency-Key` header claims (user, key) here before its turn runs; the turn's answer is stored
-- when it is done, and a retry with the same key replays it instead of running the turn again
-- (src/layers/channels/http/idempotency.ts). A claim whose turn failed is deleted (a retry runs it
-- afresh); one whose gateway died is taken over after `expires_at` (the agent's turn deadline). Each
-- claim is a random `claim` id, and only its holder stores or frees it: a gateway that comes back after
-- its claim was taken over cannot overwrite the new holder's.
-- Rows are kept 24 hours.
CREATE TABLE http_turns (
  user_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  claim TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('running', 'done')),
  answer TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (user_id, idempotency_key)
);
--> statement-breakpoint
CREATE INDEX http_turns_age ON http_turns (created_at);
