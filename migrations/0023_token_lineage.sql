-- Which token minted which (issue 23): a token used to call POST /api/tokens is recorded as the new
-- token's minter, so revoking a stolen token can revoke what it minted. One row per token issued
-- (minted_by NULL when a person issued it: the CLI, a browser session), kept after the token is
-- revoked — a revoke with cascade still reaches tokens minted through one revoked before, and the
-- owner of a revoked minter is still known. Hashes only, as in user_tokens; no foreign key, for the
-- same reason.
CREATE TABLE token_lineage (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  minted_by TEXT,
  created_at INTEGER NOT NULL
);
--> statement-breakpoint
CREATE INDEX token_lineage_minted_by ON token_lineage (minted_by);
