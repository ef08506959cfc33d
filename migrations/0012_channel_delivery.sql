-- Exactly-once delivery for the chat platforms (issue 12). A platform delivers an inbound message at
-- least once (a reconnect, a redelivery, a restart before it was confirmed); the channel claims it
-- here, by the platform's own id for it, before acting on it, so a second delivery is seen and
-- dropped. `payload` keeps what is needed to answer it again after a crash (the message as the
-- platform sent it); `answered_at` is set once the whole reply was delivered, and `reply` holds the
-- platform's ids of the messages the reply was written into so far, so an answer resumed after a
-- restart edits them instead of sending a second reply.
CREATE TABLE channel_inbound (
  channel TEXT NOT NULL,
  message_key TEXT NOT NULL,
  payload TEXT NOT NULL,
  reply TEXT NOT NULL DEFAULT '[]',
  received_at INTEGER NOT NULL,
  answered_at INTEGER,
  PRIMARY KEY (channel, message_key)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX channel_inbound_open ON channel_inbound (channel, received_at) WHERE answered_at IS NULL;
--> statement-breakpoint
-- Where a channel's inbound stream resumes (Telegram's next update_id, WeChat's get_updates_buf, …).
CREATE TABLE channel_cursors (
  channel TEXT PRIMARY KEY,
  cursor TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
-- When a user last wrote from each identity: a notification goes to the most recent one.
ALTER TABLE user_identities ADD COLUMN last_seen_at INTEGER NOT NULL DEFAULT 0;
