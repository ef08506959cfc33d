-- The notification limit (issue 28, shared state): as migrations/0032_notify_sent.sql.
CREATE TABLE notify_sent (
  user_id TEXT NOT NULL,
  sent_at BIGINT NOT NULL
);
--> statement-breakpoint
CREATE INDEX notify_sent_user ON notify_sent (user_id, sent_at);
--> statement-breakpoint
CREATE INDEX notify_sent_age ON notify_sent (sent_at);
