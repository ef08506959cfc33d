/** Renders an agent's Markdown (web/markdown.ts) as elements: never as HTML. */
import type { JSX } from "preact"
import { type Block, type Inline, parseMarkdown } from "./markdown.ts"

const inline = (nodes: ReadonlyArray<Inline>): Array<JSX.Element | string> =>
  nodes.map((n, i) => {
    switch (n.t) {
      case "text":
        return n.v
      case "code":
        return <code key={i}>{n.v}</code>
      case "strong":
        return <strong key={i}>{inline(n.c)}</strong>
      case "em":
        return <em key={i}>{inline(n.c)}</em>
      case "link":
        return <a key={i} href={n.href} target="_blank" rel="noopener noreferrer">{inline(n.c)}</a>
      case "br":
        return <br key={i} />
    }
    return ""
  })

const block = (b: Block, i: number): JSX.Element => {
  switch (b.t) {
    case "p":
      return <p key={i}>{inline(b.c)}</p>
    case "h": {
      // Inside a page, an answer's headings stay below the page's own (h1, h2).
      const H = (`h${Math.min(6, b.level + 2)}`) as "h3" | "h4" | "h5" | "h6"
      return <H key={i}>{inline(b.c)}</H>
    }
    case "pre":
      return <pre key={i} class="code" data-lang={b.lang || undefined}><code>{b.v}</code></pre>
    case "ul":
      return <ul key={i}>{b.items.map((it, j) => <li key={j}>{inline(it)}</li>)}</ul>
    case "ol":
      return <ol key={i}>{b.items.map((it, j) => <li key={j} value={b.numbers[j]}>{inline(it)}</li>)}</ol>
    case "quote":
      return <blockquote key={i}>{b.c.map(block)}</blockquote>
  }
}

export const Markdown = (props: { readonly text: string }) => <div class="md">{parseMarkdown(props.text).map(block)}</div>
