-- Usage reports and the admin dashboard read the usage log over a window of time
-- (UsageLog.totals/breakdown: `at >= since`): an index on the call times makes a 24-hour or 7-day
-- window a range read instead of a scan of the whole log, which grows for as long as anna runs.
CREATE INDEX model_usage_at ON model_usage (at);
