-- The heartbeat's beats (issue 28): when each workspace's heartbeat (job `heartbeat:{agent}:{user}`)
-- last beat, taken in the database before the beat runs (JobStore.claimBeat), so that two gateways
-- on one database — or one frozen past its time that wakes after another took over — give a
-- workspace one beat per interval between them.
CREATE TABLE heartbeat_beats (
  job_id TEXT PRIMARY KEY,
  beat_at INTEGER NOT NULL
);
