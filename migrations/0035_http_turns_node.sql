-- The node that holds an HTTP turn's claim (issue 28): on a cluster, a claim whose node is gone (its
-- row in cluster_nodes not written for a while) is taken over at once by a retry, rather than after the
-- turn's deadline. NULL for a single gateway (its claims wait for their deadline after a crash).
ALTER TABLE http_turns ADD COLUMN node_id TEXT;
