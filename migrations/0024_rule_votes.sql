-- Chat users' feedback on shared playbook rules (issue 23): one row per (playbook, rule, user), the
-- user's latest vote. A shared rule (for every user: the global playbook's, or an agent's without
-- `user`) moves for everyone only when 3 distinct users agree, each user counted at most once
-- (src/domain/learning/consensus.ts). `scope`: '' the global playbook, else the agent whose playbook
-- holds the rule. `vote`: the latest feedback. `personal`: the part of the user's feedback not in the
-- shared rule, added to its confidence in that user's own prompt (within ±1). `counted`: the outcome
-- the vote was counted into the shared rule with (set once, never again); NULL: not counted.
CREATE TABLE rule_votes (
  scope TEXT NOT NULL,
  rule_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  vote TEXT NOT NULL CHECK (vote IN ('success', 'failure')),
  personal REAL NOT NULL DEFAULT 0 CHECK (personal >= -1 AND personal <= 1),
  counted TEXT CHECK (counted IS NULL OR counted IN ('success', 'failure')),
  at INTEGER NOT NULL,
  PRIMARY KEY (scope, rule_id, user_id)
);
--> statement-breakpoint
-- A turn reads the adjustments of its user.
CREATE INDEX rule_votes_user ON rule_votes (user_id, scope);
