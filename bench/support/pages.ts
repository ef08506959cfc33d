/**
 * Deterministic news-site pages for the webfetch benchmark (bench/reach.ts): a page's chrome (head
 * with stylesheets, an inline style and an inline analytics script, a navigation bar, a sidebar of
 * link lists, a footer of links) around one long article: a title, a byline, sections with h2/h3
 * headings, paragraphs with inline links, emphasis and code, lists, quotes, figures with captions,
 * code blocks and tables. The article grows until the page reaches the size asked for, so a 1 MB
 * page is the same kind of page with a longer article (as a long reference article is).
 *
 * The chrome holds marker words (`NAVMARK`, `SIDEMARK`, `FOOTMARK`) that the article never uses, so
 * the benchmark can check that Readability kept the article and dropped the rest.
 */
import { prng } from "./transcript.ts"

const WORDS = (
  "the a of and to in is was for on that with as by at from it this be are were which an or has have had not but " +
  "harbour city council river bridge tide water storm winter summer market street station railway ferry island coast " +
  "north south east west old new first last long short high low early late small large public private local national " +
  "report study survey plan budget project engineer architect historian resident visitor mayor committee museum " +
  "library school hospital church square garden park tower wall gate canal lock dock quay warehouse factory mill " +
  "built opened closed repaired flooded restored moved crossed measured recorded published argued agreed refused " +
  "century decade year month week morning evening night season record figure number share cost price rate level " +
  "because although while after before during since until when where however therefore meanwhile instead also still " +
  "stone timber iron steel brick glass concrete sand clay salt coal grain wool fish cargo passengers trade traffic"
).split(" ")

const CAPS = ["Harbour", "Council", "Northgate", "Elm Quay", "Saint Brigid", "Marrow Bridge", "the Ferry Company", "Dr Okafor", "Ms Lindqvist", "Professor Haddad"]

type Rand = () => number

const pickOf = <A>(rand: Rand, xs: ReadonlyArray<A>): A => xs[Math.floor(rand() * xs.length)] ?? (xs[0] as A)

const words = (rand: Rand, n: number): string => Array.from({ length: n }, () => pickOf(rand, WORDS)).join(" ")

const sentence = (rand: Rand, inline: boolean): string => {
  const parts: Array<string> = []
  const n = 2 + Math.floor(rand() * 3)
  for (let i = 0; i < n; i++) {
    const r = rand()
    const chunk = words(rand, 3 + Math.floor(rand() * 6))
    if (inline && r < 0.12) parts.push(`<a href="/archive/${Math.floor(rand() * 9000) + 1000}/${chunk.split(" ")[0] ?? "x"}">${chunk}</a>`)
    else if (inline && r < 0.18) parts.push(`<em>${chunk}</em>`)
    else if (inline && r < 0.22) parts.push(`<strong>${chunk}</strong>`)
    else if (inline && r < 0.24) parts.push(`<code>${chunk.replace(/ /g, "_")}</code>`)
    else if (r < 0.34) parts.push(`${pickOf(rand, CAPS)} ${chunk}`)
    else parts.push(chunk)
  }
  const text = parts.join(rand() < 0.3 ? ", " : " ")
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}${rand() < 0.9 ? "." : "?"}`
}

const paragraph = (rand: Rand): string =>
  `<p>${Array.from({ length: 3 + Math.floor(rand() * 5) }, () => sentence(rand, true)).join(" ")}</p>`

const block = (rand: Rand, n: number): string => {
  const r = rand()
  if (r < 0.1) return `<ul>${Array.from({ length: 3 + Math.floor(rand() * 5) }, () => `<li>${sentence(rand, true)}</li>`).join("")}</ul>`
  if (r < 0.15) return `<blockquote><p>${sentence(rand, false)} ${sentence(rand, false)}</p><cite>${pickOf(rand, CAPS)}</cite></blockquote>`
  if (r < 0.21) {
    return `<figure><img src="/media/${n}/photo-${Math.floor(rand() * 1e6)}.jpg" alt="${words(rand, 5)}" width="1200" height="800" loading="lazy">` +
      `<figcaption>${sentence(rand, false)} Photo: ${pickOf(rand, CAPS)}</figcaption></figure>`
  }
  if (r < 0.24) {
    return `<pre><code class="language-text">${Array.from({ length: 4 + Math.floor(rand() * 6) }, () => words(rand, 6)).join("\n")}</code></pre>`
  }
  if (r < 0.27) {
    const row = (cell: string) => `<tr>${Array.from({ length: 4 }, () => `<${cell}>${words(rand, 2)}</${cell}>`).join("")}</tr>`
    return `<table><thead>${row("th")}</thead><tbody>${Array.from({ length: 5 }, () => row("td")).join("")}</tbody></table>`
  }
  return paragraph(rand)
}

const links = (rand: Rand, n: number, prefix: string, marker: string) =>
  `<ul>${Array.from({ length: n }, (_, i) => `<li><a href="/${prefix}/${i}">${marker} ${words(rand, 2)}</a></li>`).join("")}</ul>`

/** A whole HTML page of about `bytes` bytes (UTF-8; the text is ASCII) with an article titled `title`. */
export const newsPage = (title: string, bytes: number, seed: number): string => {
  const rand = prng(seed)
  const head = [
    "<!doctype html>",
    `<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`,
    `<title>${title} | The Harbour Gazette</title>`,
    `<meta name="description" content="${words(rand, 20)}">`,
    `<meta property="og:title" content="${title}"><meta property="og:type" content="article">`,
    ...Array.from({ length: 6 }, (_, i) => `<link rel="stylesheet" href="/static/css/site-${i}.css?v=${Math.floor(rand() * 1e8)}">`),
    `<style>${Array.from({ length: 80 }, (_, i) => `.c${i}{margin:${i % 7}px;padding:${i % 5}px;color:#${(i * 4099).toString(16).padStart(6, "0").slice(0, 6)}}`).join("")}</style>`,
    `<script>window.__analytics=${JSON.stringify({ site: "gazette", sections: Array.from({ length: 60 }, () => words(rand, 3)), ab: Array.from({ length: 40 }, (_, i) => ({ id: i, on: rand() < 0.5 })) })};</script>`,
    `<script src="/static/js/app.js" defer></script></head><body class="article-page">`
  ].join("\n")
  const nav = `<header class="site-header"><a class="logo" href="/">The Harbour Gazette</a><nav class="main-nav">${links(rand, 30, "section", "NAVMARK")}</nav>` +
    `<form class="search" action="/search"><input name="q" placeholder="Search"><button>Go</button></form></header>`
  const aside = `<aside class="sidebar"><h3>Most read</h3>${links(rand, 15, "popular", "SIDEMARK")}<h3>Newsletters</h3>${
    links(rand, 10, "newsletters", "SIDEMARK")
  }<h3>More from the city desk</h3>${links(rand, 15, "city", "SIDEMARK")}<div class="ad">Advertisement SIDEMARK</div></aside>`
  const footer = `<footer class="site-footer">${links(rand, 24, "about", "FOOTMARK")}<p>© 2026 The Harbour Gazette FOOTMARK. All rights reserved.</p></footer>`
  const related = `<section class="related"><h2>Related FOOTMARK</h2>${links(rand, 8, "related", "FOOTMARK")}</section>`
  const open = `<main><article class="story"><h1>${title}</h1><p class="byline">By ${pickOf(rand, CAPS)} · 27 November 2026 · 14 min read</p>`
  const close = "</article></main>"
  const fixed = head.length + nav.length + aside.length + footer.length + related.length + open.length + close.length + 40
  const body: Array<string> = []
  let size = fixed
  for (let section = 1; size < bytes; section++) {
    const h2 = `<h2 id="s${section}">${words(rand, 4)}</h2>`
    body.push(h2)
    size += h2.length
    const blocks = 4 + Math.floor(rand() * 5)
    for (let b = 0; b < blocks && size < bytes; b++) {
      const html = b === 2 && rand() < 0.5 ? `<h3>${words(rand, 5)}</h3>${block(rand, section)}` : block(rand, section)
      body.push(html)
      size += html.length
    }
  }
  return `${head}\n${nav}\n<div class="layout">${aside}\n${open}\n${body.join("\n")}\n${close}\n${related}</div>\n${footer}\n</body></html>\n`
}
