-- The notification limit (issue 28, shared state): when each user's recent notifications went out,
-- in the database rather than one gateway's memory, so that NOTIFY_LIMIT a minute holds across the
-- gateways of a cluster and across a restart (src/layers/channels/notifyLimit.ts). Rows older than
-- the window are deleted as the next notification (anyone's) is admitted.
CREATE TABLE notify_sent (
  user_id TEXT NOT NULL,
  sent_at INTEGER NOT NULL
);
--> statement-breakpoint
CREATE INDEX notify_sent_user ON notify_sent (user_id, sent_at);
--> statement-breakpoint
CREATE INDEX notify_sent_age ON notify_sent (sent_at);
