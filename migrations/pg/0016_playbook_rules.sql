-- The playbook's rules on PostgreSQL (issue 28): several gateways on one database cannot share the
-- YAML files SQLite installs keep ($ANNA_HOME/playbook.yaml, workspaces/<agent>/playbook.yaml), so
-- the rules live here, one row per rule. `scope` is '' for the global playbook and the agent's id
-- for an agent's own; `rule` is the rule as its YAML entry (snake_case fields, ISO 8601 times), read
-- back through the same checks as the file (src/layers/learning/pgPlaybookRules.ts); `position` keeps
-- the scope's order. A scope's update takes pg_advisory_xact_lock(hashtext('anna.playbook:' || scope)),
-- so two gateways' changes to one scope run one after the other. `anna playbook export|import` turn a
-- scope into the YAML file and back, for hand editing.
CREATE TABLE playbook_rules (
  scope TEXT NOT NULL,
  rule_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  rule JSONB NOT NULL,
  PRIMARY KEY (scope, rule_id)
);
--> statement-breakpoint
CREATE INDEX playbook_rules_order ON playbook_rules (scope, position);
