-- Plugin tools (issue 14): `mcp` and `webfetch` are plugins of kind `tool`, switched on or off for
-- every agent (`anna plugin enable|disable ID`) and per agent (`--agent A`, table agent_plugins:
-- a row overrides the global state for that agent; its `config` is merged over the plugin's).
INSERT INTO plugins (id, kind, enabled, updated_at) VALUES
  ('mcp', 'tool', 1, 0),
  ('webfetch', 'tool', 1, 0);
--> statement-breakpoint
CREATE TABLE agent_plugins (
  agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
  plugin_id TEXT NOT NULL REFERENCES plugins(id) ON DELETE CASCADE,
  enabled INTEGER,
  config TEXT NOT NULL DEFAULT '{}',
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (agent_id, plugin_id)
);
--> statement-breakpoint
CREATE TRIGGER config_version_agent_plugins_insert AFTER INSERT ON agent_plugins BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_agent_plugins_update AFTER UPDATE ON agent_plugins BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_agent_plugins_delete AFTER DELETE ON agent_plugins BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
