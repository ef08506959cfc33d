/** Sessions as memory sees them: a key plus the agent and user that own the conversation. */
export interface SessionRef {
  readonly key: string
  readonly agentId: string
  readonly userId: string
}

/**
 * Session keys are scoped per agent: `{agentId}:{platform}:{userId}:{context}`. Keys of another
 * shape (imports, tests) carry no owner unless one is given explicitly.
 */
export const sessionRefFromKey = (
  key: string,
  owner: { readonly agentId?: string | undefined; readonly userId?: string | undefined } = {}
): SessionRef => {
  const parts = key.split(":")
  const parsed = parts.length >= 4 ? { agentId: parts[0] ?? "", userId: parts[2] ?? "" } : { agentId: "", userId: "" }
  return { key, agentId: owner.agentId ?? parsed.agentId, userId: owner.userId ?? parsed.userId }
}

/** Summary ids are shown as `sum_<n>` so a model (or a person) cannot mistake them for message ids. */
export const formatSummaryId = (id: number): string => `sum_${id}`

export const parseSummaryId = (text: string): number | undefined => {
  const m = /^(?:sum_)?(\d{1,15})$/.exec(text.trim())
  return m?.[1] === undefined ? undefined : Number(m[1])
}
