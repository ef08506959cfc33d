-- Hardening (issue "Close the sandbox escapes"): where an agent's sandboxes keep their files
-- (a workspace per user, or one shared by all its users), a disk quota per workspace, which models
-- chat users may switch to with /model, and an overall deadline for one turn.

ALTER TABLE agents ADD COLUMN sandbox_workspace TEXT NOT NULL DEFAULT 'user' CHECK (sandbox_workspace IN ('user', 'shared'));
--> statement-breakpoint
ALTER TABLE agents ADD COLUMN sandbox_disk_mb INTEGER NOT NULL DEFAULT 1024 CHECK (sandbox_disk_mb >= 1);
--> statement-breakpoint
-- JSON array of model ids chat users may pick with /model besides the agent's own; "*" = any model
-- the agent's provider lists.
ALTER TABLE agents ADD COLUMN allowed_models TEXT NOT NULL DEFAULT '[]';
--> statement-breakpoint
ALTER TABLE agents ADD COLUMN turn_timeout_seconds INTEGER NOT NULL DEFAULT 900 CHECK (turn_timeout_seconds >= 1);
