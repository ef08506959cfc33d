-- A counter that every change to the configuration moves on, whichever process makes it (the CLI, the
-- admin API, the gateway itself): a running gateway reads it before each turn and from a watcher, and
-- reloads an agent's snapshot, its settings or a channel only when it moved. Reading it is one row.
CREATE TABLE config_version (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL
);
--> statement-breakpoint
INSERT INTO config_version (id, version) VALUES (1, 1);
--> statement-breakpoint
CREATE TRIGGER config_version_agents_insert AFTER INSERT ON agents BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_agents_update AFTER UPDATE ON agents BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_agents_delete AFTER DELETE ON agents BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_providers_insert AFTER INSERT ON providers BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_providers_update AFTER UPDATE ON providers BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_providers_delete AFTER DELETE ON providers BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_channels_insert AFTER INSERT ON channels BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_channels_update AFTER UPDATE ON channels BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_channels_delete AFTER DELETE ON channels BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_settings_insert AFTER INSERT ON settings BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_settings_update AFTER UPDATE ON settings BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_settings_delete AFTER DELETE ON settings BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_plugins_insert AFTER INSERT ON plugins BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_plugins_update AFTER UPDATE ON plugins BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_plugins_delete AFTER DELETE ON plugins BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_chat_agents_insert AFTER INSERT ON chat_agents BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_chat_agents_update AFTER UPDATE ON chat_agents BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
--> statement-breakpoint
CREATE TRIGGER config_version_chat_agents_delete AFTER DELETE ON chat_agents BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
