-- Who may use an agent (issue 13, access policies; src/domain/access/policy.ts): a JSON policy,
-- everyone by default (what every agent allowed before). Users get attributes (a JSON object of
-- text values, e.g. {"group":"family"}) for policies that match on them.
ALTER TABLE agents ADD COLUMN access TEXT NOT NULL DEFAULT '{"kind":"everyone"}';
--> statement-breakpoint
ALTER TABLE users ADD COLUMN attributes TEXT NOT NULL DEFAULT '{}';
