-- The gateway nodes of a cluster (issue 28): each node writes its row every few seconds — its runner
-- address, its shards, the singletons it runs, the chat platforms' channels when it runs them, its
-- live sessions — and removes it when it stops. `anna cluster status` and
-- the admin API's live sessions read it; a row not written for a while is a node that died.
-- PostgreSQL only: on SQLite a gateway is never a cluster.
CREATE TABLE cluster_nodes (
  node_id TEXT PRIMARY KEY,
  address TEXT NOT NULL,
  version TEXT NOT NULL,
  started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  seen_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  shards INTEGER NOT NULL DEFAULT 0,
  singletons JSONB NOT NULL DEFAULT '[]',
  channels JSONB NOT NULL DEFAULT '[]',
  live JSONB NOT NULL DEFAULT '[]'
);
