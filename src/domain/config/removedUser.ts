/**
 * What a removed user's kept data is stored under (issue 23). A user id can be given again once its
 * user is removed, and everything anna keys by user id — sessions and their keys, profiles, diary
 * entries, usage — would then belong to the new user. So what is kept of the old one is moved to
 * `<id>~removed-<uid>`: `~` is not allowed in a user id (see `isValidId`), so no user can ever be
 * given it, and the uid (random, one per incarnation of the id) keeps two removals of the same id apart.
 */

/** The mark between the id and the incarnation in a removed user's id. */
export const REMOVED_MARK = "~removed-"

/** The id a removed user's kept data carries. */
export const removedUserId = (userId: string, uid: string): string => `${userId}${REMOVED_MARK}${uid}`

/** Whether `userId` names a removed user's kept data (no user has such an id). */
export const isRemovedUserId = (userId: string): boolean => userId.includes(REMOVED_MARK)

/**
 * The key a session of `userId` gets when its user is removed and it is kept: in anna's keys
 * (`{agent}:{platform}:{user}:{context}`) the user part becomes `removedAs`; a key of another shape
 * (an import under a name of the operator's) gets `removedAs` appended, so that a later user of the
 * same id importing under that name starts a session of their own.
 */
export const removedSessionKey = (key: string, userId: string, removedAs: string): string => {
  const parts = key.split(":")
  if (parts.length >= 4 && parts[2] === userId) return [...parts.slice(0, 2), removedAs, ...parts.slice(3)].join(":")
  return `${key}~${removedAs}`
}
