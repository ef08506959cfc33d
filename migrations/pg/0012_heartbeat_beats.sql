-- The heartbeat's beats (issue 28): as migrations/0034_heartbeat_beats.sql.
CREATE TABLE heartbeat_beats (
  job_id TEXT PRIMARY KEY,
  beat_at BIGINT NOT NULL
);
