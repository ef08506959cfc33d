// Bundles the `anna` binary (dist/main.js) with esbuild after `tsc` has type-checked and emitted
// the library build. Why: Node spends most of a CLI start resolving and evaluating hundreds of
// ES modules (Effect alone is ~600 ms unbundled here, ~80 ms bundled). Code splitting keeps what a
// command group loads lazily (`import()`: model SDKs, Docker client, runtime, gateway) in chunks
// that a memory or config command never reads. The model SDKs and dockerode stay external (loaded
// from node_modules, and only by the chunks that need them).
//
// So do the chat platforms' SDKs whose bundled form would behave otherwise than from node_modules:
// the Lark SDK reads its version from `__dirname/../package.json` when it loads, and grammy's
// node-fetch calls Node's punycode and url.parse(), which print deprecation warnings when called
// from outside node_modules — from a chunk, that is at every gateway start. (test/programs/
// bundleLoads.test.ts imports every chunk, starts every channel kind from the bundle, and lists
// any bundled dependency that reads __dirname or __filename.)
import { build } from "esbuild"
import { execFileSync } from "node:child_process"
import { rmSync, writeFileSync } from "node:fs"
import { join, relative, sep } from "node:path"

// ANNA_BUNDLE_OUT: another output folder (the test of the bundle builds one of its own).
const out = process.env.ANNA_BUNDLE_OUT ?? "dist"
// undici (a dependency of @effect/platform-node) is imported only by its undici HTTP client, which anna
// does not use (telemetry sends with its node:http client); bundled, it would read its own folder at load.
const external = ["openai", "@anthropic-ai/sdk", "dockerode", "@larksuiteoapi/node-sdk", "grammy", "undici"]
rmSync(`${out}/chunks`, { recursive: true, force: true })
const result = await build({
  entryPoints: { main: "src/main.ts" },
  outdir: out,
  entryNames: "[name]",
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22",
  sourcemap: "linked",
  external,
  metafile: true,
  logLevel: "warning",
  // CommonJS dependencies bundled into ES modules find none of CommonJS's module globals, and Node
  // fails the whole chunk on a read of one ("__dirname is not defined in ES module scope"). Every
  // output file (main.js and each chunk) defines them for itself: `require` (for Node's built-ins
  // and the external packages), and `__filename`/`__dirname` as that file's own path and folder —
  // not the dependency's, so a dependency that reads files next to itself must stay external (see
  // above). `define` points the free names at the banner's, so that a module declaring its own
  // `__dirname` keeps it, without a clash with the banner's declaration.
  banner: {
    js: [
      "import { createRequire as __annaRequire } from 'node:module';",
      "import { fileURLToPath as __annaFileUrlToPath } from 'node:url';",
      "import { dirname as __annaDirnameOf } from 'node:path';",
      "const require = __annaRequire(import.meta.url);",
      "const __annaFilename = __annaFileUrlToPath(import.meta.url);",
      "const __annaDirname = __annaDirnameOf(__annaFilename);"
    ].join(" ")
  },
  define: { __filename: "__annaFilename", __dirname: "__annaDirname" }
})
if (process.env.ANNA_BUNDLE_META) writeFileSync(process.env.ANNA_BUNDLE_META, JSON.stringify(result.metafile))
// What `anna --help` and the memory commands load must not pull in a model SDK or Docker client.
// esbuild names outputs by their path relative to the working directory.
const main = result.metafile.outputs[relative(process.cwd(), join(out, "main.js")).split(sep).join("/")]
if (main === undefined) throw new Error(`bundle: no ${out}/main.js in esbuild's output`)
const eager = main.imports.filter((i) => !i.kind.includes("dynamic")).map((i) => i.path)
const heavy = eager.filter((p) => external.includes(p))
if (heavy.length > 0) {
  console.error(`bundle: ${out}/main.js loads ${heavy.join(", ")} at start; import them lazily`)
  process.exit(1)
}

// `anna --help` is printed from these files (src/programs/start.ts): rendered here by the CLI
// itself (`-h` takes the live path), plain and as on a color terminal.
rmSync(`${out}/help.txt`, { force: true })
rmSync(`${out}/help.ansi`, { force: true })
const env = { ...process.env }
delete env.NO_COLOR
delete env.ANNA_LOG_LEVEL // a value the CLI refuses must not break the build
const render = (tty) =>
  execFileSync(process.execPath, [...(tty ? ["--import", "data:text/javascript,process.stdout.isTTY=true"] : []), `${out}/main.js`, "-h"], { env, encoding: "utf8" })
writeFileSync(`${out}/help.txt`, render(false))
writeFileSync(`${out}/help.ansi`, render(true))
