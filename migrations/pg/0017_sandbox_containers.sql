-- The live sandbox containers of a cluster's nodes (issue 28), so that the caps `sandbox.max_per_user`
-- and `sandbox.max_total` count every node's containers, not each node's own
-- (src/layers/sandbox/clusterAdmission.ts): a row from when a node admits a container until it is
-- removed. Admissions are serialised cluster-wide by an advisory lock; they count this node's rows
-- and those of nodes whose `cluster_nodes` row is fresh (a dead node's no longer count). A node
-- deletes the rows left under its own id when it starts; rows of nodes gone for long are deleted
-- when admitting. `user_id` '' is nobody in particular (counted in the total only).
-- PostgreSQL only: one gateway (SQLite or PostgreSQL without the cluster) counts in memory.
CREATE TABLE sandbox_containers (
  node_id TEXT NOT NULL,
  slot_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  workspace TEXT,
  since TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (node_id, slot_id)
);
--> statement-breakpoint
CREATE INDEX sandbox_containers_user ON sandbox_containers (user_id);
