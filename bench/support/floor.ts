/**
 * The floor: the same operations written as the simplest raw SQL on `node:sqlite` (no Effect, no
 * Schema, no locks, no live-context table, no DAG links). Same pragmas as our database (WAL,
 * synchronous NORMAL) and the same FTS5 tokenizers (porter for every row, trigram for CJK rows), so
 * the ratio ours / floor is the price of everything our engine adds on top of SQLite.
 */
import { DatabaseSync, type StatementSync } from "node:sqlite"
import { summarizeText } from "../../src/layers/memory/DeterministicSummarizer.ts"
import { hasCjk, type Message, messageText, type NewMessage, type Role } from "../../src/domain/message.ts"

const SCHEMA = [
  "PRAGMA journal_mode = WAL",
  "PRAGMA synchronous = NORMAL",
  `CREATE TABLE messages (id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL, seq INTEGER NOT NULL,
    role TEXT NOT NULL, content TEXT NOT NULL, created_at INTEGER NOT NULL, UNIQUE (conversation_id, seq))`,
  "CREATE VIRTUAL TABLE messages_fts USING fts5 (text, content = '', tokenize = 'porter unicode61 remove_diacritics 2')",
  "CREATE VIRTUAL TABLE messages_cjk USING fts5 (text, content = '', tokenize = 'trigram')",
  `CREATE TABLE summaries (id INTEGER PRIMARY KEY, conversation_id INTEGER NOT NULL, depth INTEGER NOT NULL,
    content TEXT NOT NULL, tokens INTEGER NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
    earliest_at INTEGER NOT NULL, latest_at INTEGER NOT NULL, parent_id INTEGER)`,
  "CREATE INDEX summaries_live ON summaries (conversation_id, parent_id)",
  "CREATE VIRTUAL TABLE summaries_fts USING fts5 (text, content = '', tokenize = 'porter unicode61 remove_diacritics 2')"
]

/** The floor's token estimate: UTF-8 bytes / 4, plus the per-message overhead ours charges. */
const tokensOf = (text: string): number => Math.ceil(Buffer.byteLength(text) / 4) + 4

const ROLES: ReadonlySet<string> = new Set(["user", "assistant", "tool_result"])
const asRole = (v: unknown): Role => (typeof v === "string" && ROLES.has(v) ? (v as Role) : "user")
const num = (v: unknown): number => (typeof v === "number" ? v : Number(v))
const str = (v: unknown): string => (typeof v === "string" ? v : String(v))

export type FloorQuery =
  | { readonly kind: "fts"; readonly match: string }
  | { readonly kind: "trigram"; readonly match: string }
  /** Terms under 3 characters: the trigram index cannot answer them, so scan newest first. */
  | { readonly kind: "substring"; readonly text: string }

export interface SummarizerClock {
  ms: number
  calls: number
}

export const openFloor = (file: string) => {
  const db = new DatabaseSync(file)
  for (const s of SCHEMA) db.exec(s)
  const nextSeq = new Map<number, number>()
  const statements = new Map<string, StatementSync>()
  const prepare = (sql: string): StatementSync => {
    let s = statements.get(sql)
    if (s === undefined) {
      s = db.prepare(sql)
      statements.set(sql, s)
    }
    return s
  }
  const insertMessage = db.prepare(
    "INSERT INTO messages (conversation_id, seq, role, content, created_at) VALUES (?, ?, ?, ?, ?)"
  )
  const insertFts = db.prepare("INSERT INTO messages_fts (rowid, text) VALUES (?, ?)")
  const insertCjk = db.prepare("INSERT INTO messages_cjk (rowid, text) VALUES (?, ?)")

  const insert = (conversationId: number, m: NewMessage) => {
    const seq = nextSeq.get(conversationId) ?? 1
    nextSeq.set(conversationId, seq + 1)
    const r = insertMessage.run(conversationId, seq, m.role, JSON.stringify(m.content), m.createdAt ?? Date.now())
    const text = messageText(m)
    insertFts.run(r.lastInsertRowid, text)
    if (hasCjk(text)) insertCjk.run(r.lastInsertRowid, text)
  }

  const transaction = <A>(f: () => A): A => {
    db.exec("BEGIN IMMEDIATE")
    try {
      const a = f()
      db.exec("COMMIT")
      return a
    } catch (e) {
      db.exec("ROLLBACK")
      throw e
    }
  }

  /** Newest messages (after the last live summary) while they fit, then live summaries while they fit. */
  const assemble = (conversationId: number, budget: number): Array<Message> => {
    const live = prepare(`SELECT id, content, tokens, last_seq FROM summaries
      WHERE conversation_id = ? AND parent_id IS NULL ORDER BY last_seq DESC`).all(conversationId)
    const after = live.length === 0 ? 0 : num(live[0]?.last_seq)
    const out: Array<Message> = []
    let tokens = 0
    const rows = prepare("SELECT role, content FROM messages WHERE conversation_id = ? AND seq > ? ORDER BY seq DESC")
    for (const row of rows.iterate(conversationId, after)) {
      const content = str(row.content)
      const t = tokensOf(content)
      if (tokens + t > budget) break
      tokens += t
      out.push({ role: asRole(row.role), content: JSON.parse(content) as Message["content"] })
    }
    for (const s of live) {
      const t = num(s.tokens)
      if (tokens + t > budget) break
      tokens += t
      out.push({ role: "user", content: `<summary id="${num(s.id)}">\n${str(s.content)}\n</summary>` })
    }
    return out.reverse()
  }

  const search = (query: FloorQuery, conversationIds: ReadonlyArray<number> | null, limit: number) => {
    const scope = conversationIds === null ? "" : ` AND m.conversation_id IN (${conversationIds.map(() => "?").join(",")})`
    const ids = conversationIds ?? []
    switch (query.kind) {
      case "fts":
      case "trigram": {
        const fts = query.kind === "fts" ? "messages_fts" : "messages_cjk"
        return prepare(`SELECT m.id, m.conversation_id, bm25(${fts}) AS score FROM ${fts} f JOIN messages m ON m.id = f.rowid
          WHERE ${fts} MATCH ?${scope} ORDER BY score LIMIT ?`).all(query.match, ...ids, limit)
      }
      case "substring":
        return prepare(`SELECT m.id, m.conversation_id FROM messages m WHERE instr(m.content, ?) > 0${scope}
          ORDER BY m.id DESC LIMIT ?`).all(query.text, ...ids, limit)
    }
  }

  /**
   * Full compaction, simplest form: leaf summaries of ≥ 10 messages and ≥ 20k tokens outside a
   * fresh tail of 20, then groups of up to 8 same-depth summaries until one is left, each
   * summarized by the same deterministic summarizer, all in one transaction.
   */
  const compact = (conversationId: number, sessionKey: string, clock: SummarizerClock) => {
    const summarize = (input: Parameters<typeof summarizeText>[0]["input"], sourceTokens: number) => {
      const t0 = performance.now()
      const text = summarizeText({ sessionKey, mode: "normal", targetTokens: Math.max(1, Math.floor(sourceTokens / 3)), input })
      clock.ms += performance.now() - t0
      clock.calls++
      return text
    }
    const insertSummary = prepare(`INSERT INTO summaries (conversation_id, depth, content, tokens, first_seq, last_seq,
      earliest_at, latest_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
    const insertSummaryFts = prepare("INSERT INTO summaries_fts (rowid, text) VALUES (?, ?)")
    const setParent = prepare("UPDATE summaries SET parent_id = ? WHERE id = ?")
    interface Made {
      id: number
      content: string
      tokens: number
      firstSeq: number
      lastSeq: number
      earliestAt: number
      latestAt: number
    }
    const store = (depth: number, content: string, first: Omit<Made, "id" | "content" | "tokens">): Made => {
      const tokens = tokensOf(content)
      const r = insertSummary.run(
        conversationId, depth, content, tokens, first.firstSeq, first.lastSeq, first.earliestAt, first.latestAt
      )
      insertSummaryFts.run(r.lastInsertRowid, content)
      return { id: num(r.lastInsertRowid), content, tokens, ...first }
    }
    return transaction(() => {
      const rows = prepare("SELECT seq, role, content, created_at FROM messages WHERE conversation_id = ? ORDER BY seq")
        .all(conversationId)
      const older = rows.slice(0, Math.max(0, rows.length - 20))
      let level: Array<Made> = []
      let chunk: Array<{ seq: number; role: Role; text: string; createdAt: number; tokens: number }> = []
      let chunkTokens = 0
      for (const row of older) {
        const content = str(row.content)
        const message: Message = { role: asRole(row.role), content: JSON.parse(content) as Message["content"] }
        const t = tokensOf(content)
        chunk.push({ seq: num(row.seq), role: message.role, text: messageText(message), createdAt: num(row.created_at), tokens: t })
        chunkTokens += t
        if (chunk.length >= 10 && chunkTokens >= 20_000) {
          const text = summarize({ kind: "leaf", messages: chunk }, chunkTokens)
          const head = chunk[0]
          const tail = chunk[chunk.length - 1]
          if (head !== undefined && tail !== undefined) {
            level.push(store(0, text, {
              firstSeq: head.seq, lastSeq: tail.seq, earliestAt: head.createdAt, latestAt: tail.createdAt
            }))
          }
          chunk = []
          chunkTokens = 0
        }
      }
      const made = { leaf: level.length, condensed: 0 }
      for (let depth = 1; level.length >= 2; depth++) {
        const next: Array<Made> = []
        for (let i = 0; i < level.length; i += 8) {
          const group = level.slice(i, i + 8)
          const head = group[0]
          const tail = group[group.length - 1]
          if (group.length < 2 || head === undefined || tail === undefined) {
            next.push(...group)
            continue
          }
          const text = summarize({
            kind: "condensed",
            depth: depth - 1,
            summaries: group.map((s) => ({ id: `s${s.id}`, content: s.content, earliestAt: s.earliestAt, latestAt: s.latestAt }))
          }, group.reduce((n, s) => n + s.tokens, 0))
          const parent = store(depth, text, {
            firstSeq: head.firstSeq, lastSeq: tail.lastSeq, earliestAt: head.earliestAt, latestAt: tail.latestAt
          })
          for (const s of group) setParent.run(parent.id, s.id)
          next.push(parent)
          made.condensed++
        }
        level = next
      }
      return made
    })
  }

  return {
    appendBatch: (conversationId: number, messages: ReadonlyArray<NewMessage>) =>
      transaction(() => {
        for (const m of messages) insert(conversationId, m)
      }),
    appendOne: (conversationId: number, message: NewMessage) => transaction(() => insert(conversationId, message)),
    assemble,
    search,
    compact,
    close: () => db.close()
  }
}

export type Floor = ReturnType<typeof openFloor>
