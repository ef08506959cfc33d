/**
 * README.md says what is true: no template slot or note-to-self left in it, every `anna …` command
 * line it shows parses with the real command tree (code blocks, the command table and the commands
 * named in the text), and the layout table names every subsystem folder of src/layers/ and src/domain/.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { makeParser } from "../support/cliParse.ts"
import { shellCommands, synopsisInstances } from "../support/synopsis.ts"

const ROOT = resolve(import.meta.dirname, "../..")
const README = readFileSync(join(ROOT, "README.md"), "utf8")
const LINES = README.split("\n")

interface Line {
  readonly n: number
  readonly text: string
}

/** The lines of fenced code blocks with their language, and the lines outside them. */
const split = () => {
  const blocks: Array<{ readonly lang: string; readonly lines: Array<Line> }> = []
  const prose: Array<Line> = []
  let open: { readonly lang: string; readonly lines: Array<Line> } | undefined
  LINES.forEach((text, i) => {
    const fence = /^\s*```(\w*)/.exec(text)
    if (fence !== null) {
      if (open === undefined) {
        open = { lang: fence[1] ?? "", lines: [] }
        blocks.push(open)
      } else open = undefined
    } else if (open !== undefined) open.lines.push({ n: i + 1, text })
    else prose.push({ n: i + 1, text })
  })
  return { blocks, prose }
}
const { blocks, prose } = split()

/** Inline code spans of a line (table cells unescape `\|`). */
const spans = (text: string): Array<string> => [...text.matchAll(/`([^`]+)`/g)].map((m) => (m[1] ?? "").replaceAll("\\|", "|"))

const sectionOf = (n: number): string => {
  for (let i = n - 1; i >= 0; i--) if (/^#{1,4} /.test(LINES[i] ?? "")) return LINES[i] ?? ""
  return ""
}

describe("README.md", () => {
  it("has no template slot or note-to-self", () => {
    const found: Array<string> = []
    for (const { n, text } of prose) {
      const bare = text.replace(/`[^`]*`/g, "")
      // A slot: a name in capitals with underscores (PLATFORM_SECTIONS), {{name}}, <!-- name -->, outside code.
      // Linux capabilities (CAP_SYS_ADMIN) are the one such name written bare on purpose.
      for (const m of bare.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\{\{[^}]*\}\}|<!--.*?-->/g)) {
        if (!/^CAP_[A-Z_]+$/.test(m[0])) found.push(`${n}: ${m[0]}`)
      }
    }
    for (const [i, text] of LINES.entries()) {
      for (const m of text.matchAll(/\b(TODO|TBD|FIXME|XXX)\b/g)) found.push(`${i + 1}: ${m[0]}`)
    }
    assert.deepStrictEqual(found, [])
  })

  it("shows only anna command lines that parse", async () => {
    const parse = await makeParser()
    // Strict: what the code blocks and the command table show must parse as it stands (placeholders filled in).
    // Lenient: a command named in the text may leave out what it needs (`anna agent set <id> --access`), but
    // every command, flag and value it names must exist.
    const lines: Array<{ readonly where: string; readonly argv: ReadonlyArray<string>; readonly lenient: boolean }> = []
    const add = (where: string, lenient: boolean) => (argv: ReadonlyArray<string>) => lines.push({ where, argv, lenient })
    // Code blocks: shell lines, or synopses (`anna skill list [--agent A]`).
    for (const b of blocks.filter((b) => ["", "sh", "bash", "shell"].includes(b.lang))) {
      const logical = b.lines.map((l) => l.text).join("\n").replace(/\\\n/g, " ").split("\n")
      const first = b.lines[0]?.n ?? 0
      for (const text of logical) {
        const synopsis = /^\s*anna\b.*(?:\[[-<A-Za-z]|<[a-z]|…)/.test(text)
        const found = synopsis ? synopsisInstances(text.replace(/\s+#\s.*$/, "")) : shellCommands(text)
        found.forEach(add(`code block at line ${first} (${sectionOf(first)}): ${text.trim()}`, false))
      }
    }
    // The command table: each cell's synopses (a span not starting with anna continues the previous command's group).
    // Elsewhere in the text: every code span that starts with `anna `.
    for (const { n, text } of prose) {
      const table = /^\| `anna/.test(text)
      const cell = table ? text.split(/(?<!\\)\|/)[1] ?? "" : text
      let group = ""
      for (const span of spans(cell)) {
        if (span.startsWith("anna ") || span === "anna") {
          group = span.split(/\s+/).slice(0, 2).join(" ")
        } else if (!(table && /^[a-z]/.test(span) && group !== "")) continue
        const synopsis = span.startsWith("anna") ? span : `${group} ${span}`
        synopsisInstances(synopsis).forEach(add(`line ${n} (${sectionOf(n)}): ${synopsis}`, !table))
      }
    }
    assert.isAbove(lines.length, 300)
    const failures: Array<string> = []
    for (const l of lines) {
      const problems = (await parse(l.argv)).filter((p) => !(l.lenient && /^Missing (required|value for flag)/.test(p)))
      if (problems.length > 0) failures.push(`${l.where}\n    anna ${l.argv.join(" ")}: ${problems.join("; ")}`)
    }
    assert.deepStrictEqual(failures, [])
  }, 120_000)

  it("names every subsystem folder of src/layers/ and src/domain/ in the layout table", () => {
    const folders = (dir: string) => readdirSync(join(ROOT, dir), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name)
    const rows = LINES.filter((l) => /^\| `src\//.test(l))
    const row = (folder: string) => rows.find((r) => r.startsWith(`| \`${folder}\``))
    const missing = [
      ...folders("src/layers").filter((f) => row(`src/layers/${f}/`) === undefined).map((f) => `src/layers/${f}/`),
      // The domain's folders are named in its row.
      ...folders("src/domain").filter((f) => !(row("src/domain/") ?? "").includes(`\`${f}/\``)).map((f) => `src/domain/${f}/`)
    ]
    assert.deepStrictEqual(missing, [])
  })
})
