-- MCP servers an agent's `mcp` tool reaches (issue 14): stdio ones run inside the agent's sandbox
-- (`command`, a JSON array), remote ones over Streamable HTTP or SSE (`url`, `headers` — secrets,
-- never printed). Not tied to the agents table: the default agent may have no row.
CREATE TABLE mcp_servers (
  agent_id TEXT NOT NULL,
  name TEXT NOT NULL,
  transport TEXT NOT NULL CHECK (transport IN ('stdio', 'http', 'sse')),
  command TEXT,
  url TEXT,
  headers TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (agent_id, name),
  CHECK ((transport = 'stdio') = (command IS NOT NULL AND url IS NULL))
);
--> statement-breakpoint
CREATE TRIGGER config_version_mcp_servers_insert AFTER INSERT ON mcp_servers BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_mcp_servers_update AFTER UPDATE ON mcp_servers BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_mcp_servers_delete AFTER DELETE ON mcp_servers BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
