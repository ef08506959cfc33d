// Builds the web console (web/, issue 13) into dist/web: the JavaScript and CSS named by their
// content hash under assets/ (cached for ever by the browser), and an index.html that names them
// (no inline script or style: the console's CSP is `default-src 'self'`). Everything the console
// needs is in these files: no CDN, works offline. Preact's JSX is compiled by esbuild.
//
// A running gateway may be serving dist/web while it is rebuilt (`npm start` builds first; tests
// run side by side): every file is replaced atomically (written aside, then renamed over), index.html
// last, and only then are files of older builds removed, so a page never meets a missing or half
// written file.
import { build } from "esbuild"
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { basename, join, relative, resolve, sep } from "node:path"
import { gzipSync } from "node:zlib"

// ANNA_WEB_OUT: another output folder (a test may build its own).
const out = resolve(process.env.ANNA_WEB_OUT ?? "dist/web")
const assets = join(out, "assets")
mkdirSync(assets, { recursive: true })

// effect/http-api's barrel carries the Swagger UI and Scalar documentation pages (~5 MB of embedded
// JavaScript behind dynamic imports) that only a server serves; the console never loads them, so
// they are left out rather than shipped as dead chunks.
const docsPagesOut = {
  name: "no-api-docs-pages",
  setup(b) {
    b.onResolve({ filter: /internal\/httpApi(Scalar|Swagger)\.js$/ }, (args) => ({ path: args.path, namespace: "anna-empty" }))
    b.onLoad({ filter: /.*/, namespace: "anna-empty" }, () => ({ contents: "export {}", loader: "js" }))
  }
}
const result = await build({
  entryPoints: { app: "web/main.tsx", style: "web/style.css" },
  outdir: assets,
  entryNames: "[name]-[hash]",
  chunkNames: "chunk-[hash]",
  // What one page alone needs (the WeChat QR encoder) loads with that page.
  splitting: true,
  assetNames: "[name]-[hash]",
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2022", "chrome110", "firefox110", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  minify: true,
  // No source maps: effect's would add ~9 MB to the package for a console nobody debugs in production.
  sourcemap: false,
  legalComments: "none",
  define: { "process.env.NODE_ENV": '"production"' },
  write: false,
  logLevel: "warning",
  plugins: [docsPagesOut]
})

/** Writes `file` aside and renames it into place (readers see the old file or the new one). */
const replace = (file, contents) => {
  const aside = `${file}.${process.pid}.tmp`
  writeFileSync(aside, contents)
  renameSync(aside, file)
}

const files = result.outputFiles
const pick = (name, ext) => {
  const found = files.find((f) => f.path.endsWith(ext) && basename(f.path).startsWith(`${name}-`))
  if (found === undefined) throw new Error(`build-web: no ${name}${ext} output`)
  return relative(out, found.path).split(sep).join("/")
}
const js = pick("app", ".js")
const css = pick("style", ".css")

// A guard on what the package ships: the console is ~0.7 MB; several MB means something heavy slipped in.
const total = files.reduce((n, f) => n + f.contents.length, 0)
if (total > 2 * 1024 * 1024) throw new Error(`build-web: the console's assets come to ${(total / 1048576).toFixed(1)} MB; see what esbuild bundled`)

// Each asset also gzipped beside it (`NAME.gz`, level 9, made once here): the gateway sends that to
// a browser that accepts gzip, so the first load is ~200 KiB instead of ~640 KiB, with no
// compression work per request.
const gzipped = files.filter((f) => /\.(js|css)$/.test(f.path)).map((f) => ({ path: `${f.path}.gz`, contents: gzipSync(f.contents, { level: 9 }) }))
for (const f of [...files, ...gzipped]) replace(f.path, f.contents)
replace(join(out, "index.html"), readFileSync("web/index.html", "utf8").replace("%APP_JS%", `/${js}`).replace("%APP_CSS%", `/${css}`))
const current = new Set([...files, ...gzipped].map((f) => basename(f.path)))
for (const name of readdirSync(assets)) if (!current.has(name) && !name.endsWith(".tmp")) rmSync(join(assets, name), { force: true })

if (process.env.ANNA_WEB_SIZES) {
  const size = (p) => {
    const bytes = readFileSync(join(out, p))
    return `${(bytes.length / 1024).toFixed(1)} KiB (${(gzipSync(bytes).length / 1024).toFixed(1)} KiB gzipped)`
  }
  console.log(`web console: ${js} ${size(js)}, ${css} ${size(css)}; ${(total / 1024).toFixed(0)} KiB in all`)
}
