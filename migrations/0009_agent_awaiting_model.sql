-- An agent created without a model is disabled until it has one (issue 10). `awaiting_model` tells
-- that state apart from an agent the operator disabled: the first is enabled as soon as it gets a
-- model, the second stays disabled.
ALTER TABLE agents ADD COLUMN awaiting_model INTEGER NOT NULL DEFAULT 0 CHECK (awaiting_model IN (0, 1));
--> statement-breakpoint
-- Agents enabled without a usable model could never answer, yet were the fallback for new users:
-- they wait for a model from now on.
UPDATE agents SET enabled = 0, awaiting_model = 1
  WHERE enabled = 1
    AND (provider_id IS NULL
      OR (model = '' AND coalesce((SELECT default_model FROM providers p WHERE p.id = agents.provider_id), '') = ''));
