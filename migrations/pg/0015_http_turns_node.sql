-- The node that holds an HTTP turn's claim (issue 28): as migrations/0035_http_turns_node.sql.
ALTER TABLE http_turns ADD COLUMN node_id TEXT;
