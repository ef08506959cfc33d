-- Per-agent sandbox settings: image ('' = anna's default image), network policy and limits.

ALTER TABLE agents ADD COLUMN sandbox_image TEXT NOT NULL DEFAULT '';
--> statement-breakpoint
ALTER TABLE agents ADD COLUMN sandbox_network TEXT NOT NULL DEFAULT 'disabled' CHECK (sandbox_network IN ('disabled', 'allow_all'));
--> statement-breakpoint
ALTER TABLE agents ADD COLUMN sandbox_memory_mb INTEGER NOT NULL DEFAULT 1024 CHECK (sandbox_memory_mb >= 16);
--> statement-breakpoint
ALTER TABLE agents ADD COLUMN sandbox_cpus REAL NOT NULL DEFAULT 1 CHECK (sandbox_cpus > 0);
--> statement-breakpoint
ALTER TABLE agents ADD COLUMN sandbox_pids INTEGER NOT NULL DEFAULT 256 CHECK (sandbox_pids >= 8);
