/**
 * The `anna …` command lines a README shows, as argument vectors to parse:
 *
 * - **Shell lines** (code blocks): words split as the shell splits them (quotes, `\` at the end of a
 *   line continues it, `#` starts a comment), commands separated by `&&`, `||`, `;`, `|`, `&`, `$(…)`;
 *   `anna`, `npx node dist/main.js` and `node dist/main.js` all run anna. `$VAR` becomes `x`.
 * - **Synopses** (the command table, prose): a small grammar — `[…]` optional, `(…)` a group,
 *   ` | ` between alternatives of a group, `a|b` alternatives of one word, `…` repetition (ignored),
 *   `<name>` and CAPITALS placeholders. Each synopsis gives several instances: every optional part
 *   in with the first alternatives, then each other alternative (and each optional part left out) once.
 *
 * Placeholders take sample values (`SAMPLES`, else `5`, which every flag type parses; `<command…>`
 * is `ls`; any other `<name>` is `x`).
 */

/** Sample values of placeholders whose flags check their form while parsing. */
const SAMPLES: Readonly<Record<string, string>> = {
  EXPR: "0 8 * * 1-5",
  DURATION: "30m",
  TIME: "2030-01-01T08:00:00Z",
  ZONE: "Europe/Berlin",
  URL: "http://127.0.0.1:9/v1"
}

const placeholder = /<[^<>]*>|\b[A-Z][A-Z0-9]*(?:[_-][A-Z0-9]+)*\b/g

/** A word with its placeholders filled in, `…` (and a comma before it) and quotes dropped. */
const fill = (word: string): string =>
  word
    .replace(/,?…/g, "")
    .replace(placeholder, (p) => (p.startsWith("<") ? (p.includes("command") ? "ls" : "x") : SAMPLES[p] ?? "5"))

// ── Synopses ────────────────────────────────────────────────────────────────────────────────────

type Node =
  | { readonly _tag: "Word"; readonly alternatives: ReadonlyArray<string> }
  | { readonly _tag: "Group"; readonly optional: boolean; readonly alternatives: ReadonlyArray<ReadonlyArray<Node>> }

type Token = { readonly _tag: "Open"; readonly optional: boolean } | { readonly _tag: "Close" } | { readonly _tag: "Bar" } | { readonly _tag: "Word"; readonly text: string }

const count = (s: string, c: string) => s.split(c).length - 1

/** Words split at white space, except within double quotes. */
const chunks = (synopsis: string): Array<string> => [...synopsis.matchAll(/(?:"[^"]*"|[^\s"])+/g)].map((m) => m[0])

const tokenize = (synopsis: string): Array<Token> => {
  const out: Array<Token> = []
  for (let chunk of chunks(synopsis)) {
    if (chunk === "|") {
      out.push({ _tag: "Bar" })
      continue
    }
    while (chunk.startsWith("[") || chunk.startsWith("(")) {
      out.push({ _tag: "Open", optional: chunk.startsWith("[") })
      chunk = chunk.slice(1)
    }
    let closes = 0
    // A closing bracket ends a group unless it closes one opened inside the word (`USER[@CHANNEL]`).
    for (;;) {
      const bare = chunk.replace(/…$/, "")
      const last = bare.at(-1)
      if (last === ")" && count(bare, ")") > count(bare, "(") || last === "]" && count(bare, "]") > count(bare, "[")) {
        chunk = bare.slice(0, -1)
        closes++
      } else {
        chunk = bare
        break
      }
    }
    if (chunk !== "") out.push({ _tag: "Word", text: chunk })
    for (let i = 0; i < closes; i++) out.push({ _tag: "Close" })
  }
  return out
}

/** A word's alternatives: `a|b|c`, and `X[suffix]` with and without its suffix. */
const wordAlternatives = (text: string): ReadonlyArray<string> =>
  text.startsWith("<")
    ? [text]
    : text.split("|").flatMap((w) => {
      const inner = /^(.*)\[([^\]]*)\](.*)$/.exec(w)
      return inner === null ? [w] : [`${inner[1]}${inner[2]}${inner[3]}`, `${inner[1]}${inner[3]}`]
    })

const parse = (tokens: ReadonlyArray<Token>): ReadonlyArray<Node> => {
  let i = 0
  const sequence = (): Array<Array<Node>> => {
    const alternatives: Array<Array<Node>> = [[]]
    while (i < tokens.length) {
      const t = tokens[i++] as Token
      if (t._tag === "Close") return alternatives
      const current = alternatives[alternatives.length - 1] as Array<Node>
      if (t._tag === "Bar") alternatives.push([])
      else if (t._tag === "Word") current.push({ _tag: "Word", alternatives: wordAlternatives(t.text) })
      else current.push({ _tag: "Group", optional: t.optional, alternatives: sequence() })
    }
    return alternatives
  }
  const top = sequence()
  if (top.length !== 1) throw new Error(`alternatives outside a group in: ${tokens.map((t) => (t._tag === "Word" ? t.text : t._tag)).join(" ")}`)
  return top[0] as Array<Node>
}

/** Every choice point of a synopsis with its number of choices (an optional group: one more, leaving it out). */
const choicePoints = (nodes: ReadonlyArray<Node>, out: Array<{ readonly node: Node; readonly choices: number }> = []) => {
  for (const n of nodes) {
    const choices = n.alternatives.length + (n._tag === "Group" && n.optional ? 1 : 0)
    if (choices > 1) out.push({ node: n, choices })
    if (n._tag === "Group") for (const a of n.alternatives) choicePoints(a, out)
  }
  return out
}

const generate = (nodes: ReadonlyArray<Node>, choice: (n: Node) => number, minimal: boolean): Array<string> =>
  nodes.flatMap((n) => {
    const c = choice(n)
    if (n._tag === "Word") {
      const word = n.alternatives[c] ?? ""
      // A quoted word is literal text.
      return /^".*"$/.test(word) ? [word.slice(1, -1)] : [fill(word)].filter((w) => w !== "")
    }
    if (n.optional && (minimal || c === n.alternatives.length)) return []
    return generate(n.alternatives[c] ?? [], choice, minimal)
  })

/** The argument vectors (after `anna`) a synopsis stands for; see the module's header. */
export const synopsisInstances = (synopsis: string): ReadonlyArray<ReadonlyArray<string>> => {
  const words = chunks(synopsis)
  if (words[0] !== "anna") throw new Error(`not an anna command: ${synopsis}`)
  const nodes = parse(tokenize(words.slice(1).join(" ")))
  const instances = [generate(nodes, () => 0, false), generate(nodes, () => 0, true)]
  for (const point of choicePoints(nodes)) {
    for (let c = 1; c < point.choices; c++) instances.push(generate(nodes, (n) => (n === point.node ? c : 0), false))
  }
  const seen = new Set<string>()
  return instances.filter((argv) => {
    const key = JSON.stringify(argv)
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

// ── Shell lines ─────────────────────────────────────────────────────────────────────────────────

const OPERATORS = ["&&", "||", ";", "|", "&", "$(", ")", "`"]
/** Redirections (`> file`, `2>&1`, `<in`): not arguments, nor is the file after a bare one. */
const REDIRECTION = /^(?:\d?>>?|<)/
const BARE_REDIRECTION = /^(?:\d?>>?|<)$/

/** One shell line's words (quotes removed), with separators between commands as `null`. */
const shellWords = (line: string): Array<string | null> => {
  const out: Array<string | null> = []
  let word: string | undefined
  const end = () => {
    if (word !== undefined) out.push(word)
    word = undefined
  }
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string
    const op = OPERATORS.find((o) => line.startsWith(o, i))
    if (op !== undefined) {
      end()
      out.push(null)
      i += op.length - 1
    } else if (c === "#" && word === undefined) {
      break
    } else if (/\s/.test(c)) {
      end()
    } else if (c === "'" || c === '"') {
      const close = line.indexOf(c, i + 1)
      if (close < 0) throw new Error(`unbalanced quote in: ${line}`)
      word = (word ?? "") + line.slice(i + 1, close)
      i = close
    } else if (c === "\\" && i + 1 < line.length) {
      word = (word ?? "") + line[i + 1]
      i++
    } else {
      word = (word ?? "") + c
    }
  }
  end()
  return out
}

const ANNA = [["anna"], ["npx", "node", "dist/main.js"], ["node", "dist/main.js"]]

/** The anna commands in a block of shell lines (`\`-continued lines joined), as argument vectors after `anna`. */
export const shellCommands = (block: string): ReadonlyArray<ReadonlyArray<string>> => {
  const commands: Array<ReadonlyArray<string>> = []
  for (const line of block.replace(/\\\n/g, " ").split("\n")) {
    const words = shellWords(line)
    let start = 0
    for (let i = 0; i <= words.length; i++) {
      if (i < words.length && words[i] !== null) continue
      const command = (words.slice(start, i) as Array<string>)
        // Variable assignments before the command, redirections and their targets.
        .filter((_w, k, all) => !all.slice(0, k + 1).every((x) => /^[A-Z_][A-Z0-9_]*=/.test(x)))
        .filter((w, k, all) => !REDIRECTION.test(w) && !BARE_REDIRECTION.test(all[k - 1] ?? ""))
      const head = ANNA.find((a) => a.every((w, k) => command[k] === w))
      if (head !== undefined) commands.push(command.slice(head.length).map((w) => w.replace(/\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/g, "x")))
      start = i + 1
    }
  }
  return commands
}
