-- Self-improving memory (issue 15). Times are Unix milliseconds.
-- Diary entries: one per burst of a session (its stored messages with seq in [from_seq, to_seq]);
-- list fields are JSON arrays of strings; `source`: model | heuristic; `trigger`: idle | new | demand | startup.
CREATE TABLE diary_entries (
  id TEXT PRIMARY KEY,
  session_key TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  from_seq INTEGER NOT NULL,
  to_seq INTEGER NOT NULL,
  accomplishments TEXT NOT NULL,
  decisions TEXT NOT NULL,
  challenges TEXT NOT NULL,
  key_learnings TEXT NOT NULL,
  tags TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('success', 'failure', 'mixed')),
  quality_score REAL NOT NULL CHECK (quality_score >= 0 AND quality_score <= 1),
  source TEXT NOT NULL CHECK (source IN ('model', 'heuristic')),
  trigger TEXT NOT NULL CHECK (trigger IN ('idle', 'new', 'demand', 'startup')),
  created_at INTEGER NOT NULL
);
--> statement-breakpoint
CREATE INDEX diary_entries_session ON diary_entries (session_key, to_seq);
--> statement-breakpoint
CREATE INDEX diary_entries_agent ON diary_entries (agent_id, created_at);
--> statement-breakpoint
-- What a burst used: playbook rules injected into a turn (kind rule, ref = rule id) and skills used
-- (kind skill, ref = name, scope operator | user). `settled_by` is the diary entry (or explicit
-- feedback) whose outcome was applied to it; NULL while the burst is open.
CREATE TABLE burst_uses (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_key TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('rule', 'skill')),
  ref TEXT NOT NULL,
  scope TEXT NOT NULL DEFAULT '',
  at INTEGER NOT NULL,
  settled_by TEXT
);
--> statement-breakpoint
CREATE INDEX burst_uses_open ON burst_uses (session_key, settled_by);
--> statement-breakpoint
-- Skills' outcomes for Thompson sampling: Beta(successes + 1, failures + 1). user_id '' for the
-- operator's skills (counted per agent), a user's id for their own.
CREATE TABLE skill_stats (
  agent_id TEXT NOT NULL,
  user_id TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL,
  successes INTEGER NOT NULL DEFAULT 0,
  failures INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (agent_id, user_id, name)
);
--> statement-breakpoint
-- The loop itself is a plugin, on for every agent by default (`anna plugin disable learning [--agent A]`).
INSERT INTO plugins (id, kind, enabled, updated_at) VALUES ('learning', 'learning', 1, 0);
