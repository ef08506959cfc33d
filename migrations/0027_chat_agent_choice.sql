-- The agent a user picked with /agent for one chat of theirs (a direct chat on a platform, a
-- terminal session name): that chat's own choice, taken before the user's default agent, so a
-- switch in one chat does not move every other chat (issue 24). `/agent ID --default` sets the
-- default instead (users.default_agent_id); group chats are bound in chat_agents.
CREATE TABLE chat_agent_choices (
  platform TEXT NOT NULL,
  user_id TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  PRIMARY KEY (platform, user_id, chat_id)
) WITHOUT ROWID;
