-- The admin dashboard counts turns (user messages) per hour or day over a window
-- (MemoryStore.turnCounts): a partial index on the user messages' times makes that a range read
-- instead of a scan of every message ever stored.
CREATE INDEX ctx_messages_user_created ON ctx_messages (created_at) WHERE role = 'user';
