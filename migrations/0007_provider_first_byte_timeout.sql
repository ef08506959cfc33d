-- A provider's time-to-first-byte limit per attempt, in seconds (NULL: the built-in default, 60 s).
ALTER TABLE providers ADD COLUMN first_byte_timeout_seconds REAL
  CHECK (first_byte_timeout_seconds IS NULL OR (first_byte_timeout_seconds > 0 AND first_byte_timeout_seconds <= 3600));
