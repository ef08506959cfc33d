-- Idempotent HTTP turns (issue 28): as migrations/0033_http_turns.sql.
CREATE TABLE http_turns (
  user_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  claim TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('running', 'done')),
  answer TEXT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (user_id, idempotency_key)
);
--> statement-breakpoint
CREATE INDEX http_turns_age ON http_turns (created_at);
