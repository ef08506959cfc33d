// Builds the web console (web/, issue 13) into dist/web: one JavaScript and one CSS file named by
// their content hash under assets/ (cached for ever by the browser), and an index.html that names
// them (no inline script or style: the console's CSP is `default-src 'self'`). Everything the
// console needs is in these files: no CDN, works offline. Preact's JSX is compiled by esbuild.
import { build } from "esbuild"
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { basename, join, relative, sep } from "node:path"
import { gzipSync } from "node:zlib"

// ANNA_WEB_OUT: another output folder (a test may build its own).
const out = process.env.ANNA_WEB_OUT ?? "dist/web"
rmSync(out, { recursive: true, force: true })
mkdirSync(join(out, "assets"), { recursive: true })
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
  outdir: join(out, "assets"),
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
  metafile: true,
  legalComments: "linked",
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "warning",
  plugins: [docsPagesOut]
})
const outputs = Object.keys(result.metafile.outputs).map((p) => p.split("/").join(sep))
const pick = (name, ext) => {
  const found = outputs.find((p) => p.endsWith(ext) && basename(p).startsWith(`${name}-`))
  if (found === undefined) throw new Error(`build-web: no ${name}${ext} output`)
  return relative(out, found).split(sep).join("/")
}
const js = pick("app", ".js")
const css = pick("style", ".css")
const html = readFileSync("web/index.html", "utf8").replace("%APP_JS%", `/${js}`).replace("%APP_CSS%", `/${css}`)
writeFileSync(join(out, "index.html"), html)
const size = (p) => {
  const bytes = readFileSync(join(out, p))
  return `${(bytes.length / 1024).toFixed(1)} KiB (${(gzipSync(bytes).length / 1024).toFixed(1)} KiB gzipped)`
}
// A guard on what the package ships: the console is ~0.7 MB; several MB means something heavy slipped in.
const total = outputs.reduce((n, p) => n + statSync(p).size, 0)
if (total > 2 * 1024 * 1024) throw new Error(`build-web: dist/web/assets holds ${(total / 1048576).toFixed(1)} MB; see what esbuild bundled (metafile)`)
if (process.env.ANNA_WEB_SIZES) console.log(`web console: ${js} ${size(js)}, ${css} ${size(css)}`)
