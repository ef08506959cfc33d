/**
 * A bounded map that keeps the most recently set keys: what a channel remembers of the messages its
 * bot sent (for reactions, issue 15), without growing with the gateway's uptime.
 */

/** At most `limit` entries; setting a key again makes it the newest; past the limit the oldest go. */
export const makeRecent = <V>(limit: number) => {
  const entries = new Map<string, V>()
  return {
    set: (key: string, value: V): void => {
      // Maps keep insertion order: deleting first moves the key to the end, the newest side.
      entries.delete(key)
      entries.set(key, value)
      for (const oldest of entries.keys()) {
        if (entries.size <= limit) break
        entries.delete(oldest)
      }
    },
    get: (key: string): V | undefined => entries.get(key)
  }
}
