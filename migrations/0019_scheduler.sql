-- The scheduler (issue 14): jobs an operator (`anna schedule add`, the admin API) or an agent (the
-- `scheduler` tool) made, and the history of their runs. Times are Unix milliseconds.
-- A job has exactly one of cron (5 fields, in `tz`), every (a duration) or at (one shot): `kind` + `spec`;
-- `next_run_at` is the next time it is due (NULL: a one-shot that ran); `run_requested` asks the
-- running gateway to run it now (`anna schedule run`), whatever its schedule; `catch_up` NULL follows
-- the setting scheduler.catch_up.
CREATE TABLE scheduler_jobs (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('cron', 'every', 'at')),
  spec TEXT NOT NULL,
  tz TEXT,
  prompt TEXT NOT NULL,
  session_mode TEXT NOT NULL CHECK (session_mode IN ('reuse', 'new')),
  deliver_user TEXT,
  deliver_channel TEXT,
  catch_up TEXT CHECK (catch_up IN ('run', 'skip')),
  created_by TEXT NOT NULL CHECK (created_by IN ('operator', 'agent')),
  created_at INTEGER NOT NULL,
  next_run_at INTEGER,
  run_requested INTEGER NOT NULL DEFAULT 0
);
--> statement-breakpoint
CREATE INDEX scheduler_jobs_owner ON scheduler_jobs (user_id, agent_id);
--> statement-breakpoint
-- One row per run (kept after a one-shot job is gone; the last 100 per job). status: ok | error |
-- skipped (the previous run was still going) | running. `trigger`: schedule | catch_up | manual | heartbeat.
CREATE TABLE scheduler_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id TEXT NOT NULL,
  trigger TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  status TEXT NOT NULL CHECK (status IN ('ok', 'error', 'skipped', 'running')),
  reply TEXT,
  error TEXT,
  delivered_to TEXT
);
--> statement-breakpoint
CREATE INDEX scheduler_runs_job ON scheduler_runs (job_id, id);
