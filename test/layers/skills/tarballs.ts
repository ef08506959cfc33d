/** Tarballs written entry by entry with the `tar` package's Header, so tests can build hostile ones. */
import { Header } from "tar"
import { gzipSync } from "node:zlib"

export interface TarEntry {
  readonly path: string
  readonly type?: "File" | "Directory" | "SymbolicLink" | "Link" | "CharacterDevice" | "FIFO"
  readonly text?: string
  readonly linkpath?: string
  readonly mode?: number
}

export const tarball = (entries: ReadonlyArray<TarEntry>, gzip = true): Buffer => {
  const blocks: Array<Buffer> = []
  for (const e of entries) {
    const data = Buffer.from(e.text ?? "")
    const type = e.type ?? "File"
    const header = new Header({
      path: e.path,
      type,
      mode: e.mode ?? (type === "Directory" ? 0o755 : 0o644),
      size: type === "File" ? data.length : 0,
      mtime: new Date(0),
      uid: 0,
      gid: 0,
      ...(e.linkpath === undefined ? {} : { linkpath: e.linkpath })
    })
    const block = Buffer.alloc(512)
    header.encode(block)
    blocks.push(block)
    if (type === "File" && data.length > 0) blocks.push(Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]))
  }
  blocks.push(Buffer.alloc(1024))
  const tar = Buffer.concat(blocks)
  return gzip ? gzipSync(tar) : tar
}

export const skillMd = (name: string, description = `The ${name} skill`, body = `Instructions of ${name}.`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`
