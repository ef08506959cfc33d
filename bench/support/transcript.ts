/**
 * Deterministic synthetic transcripts for the benchmarks: a seeded PRNG drives user/assistant
 * turns, some assistant turns call tools (Anthropic-style tool_use blocks answered by a
 * `tool_result` message, sometimes chained), ~7 % of chat messages are Chinese, and lengths are
 * log-uniform between 20 and 2,000 characters. The same seed always gives the same messages, so
 * our engine and the raw-SQL floor store exactly the same data.
 *
 * Search targets are planted at known rates: "docker" is a common word, "zeppelin" a rare one
 * (about 1 message in 25,000), "connection refused" a phrase, "deploy*" a prefix family, and
 * "配置" / "内存泄漏" are 2- and 4-character Chinese terms.
 */
import type { ContentBlock, NewMessage } from "../../src/domain/message.ts"

/** mulberry32: tiny, fast, good enough for synthetic data. */
export const prng = (seed: number): (() => number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const EN = (
  "the to and a of is it in that you for this we on with be can not are if as have do at but from or " +
  "will so just what there file test code error run one all would should need change use like check " +
  "docker container image build config server function value request response type data log output " +
  "database migration query index table schema session user agent model token context memory message " +
  "deploy deployment deployed deploying version release branch commit merge review issue fix bug patch " +
  "network port socket timeout retry backoff cache queue worker thread process signal exit status " +
  "compile bundle module import export package dependency install update upgrade script command shell " +
  "path directory folder read write edit create delete rename move copy list find search grep match " +
  "json yaml markdown string number array object field key option flag argument parameter return " +
  "async await promise stream buffer chunk event handler callback listener emit subscribe publish " +
  "summary compaction assemble budget window limit threshold estimate count total average latency " +
  "throughput benchmark profile trace span metric alert dashboard monitor health probe restart crash " +
  "permission owner group mode secret credential password login logout auth scope role policy rule " +
  "telegram channel chat reply thread notify schedule cron job task reminder daily weekly tomorrow " +
  "looks good thanks sure maybe actually probably really quite simple easy hard slow fast better worse"
).split(" ")

const ZH = (
  "我们 你 这个 那个 问题 可以 需要 已经 现在 然后 因为 所以 但是 如果 没有 一下 怎么 为什么 " +
  "配置 服务器 数据库 容器 镜像 部署 日志 错误 测试 代码 文件 目录 命令 脚本 网络 端口 超时 重试 " +
  "缓存 队列 任务 定时 提醒 会话 用户 模型 上下文 记忆 摘要 压缩 检索 搜索 索引 性能 延迟 吞吐 " +
  "内存泄漏 连接失败 权限 密码 登录 升级 版本 发布 分支 合并 修复 补丁 明天 今天 每周 谢谢 好的 " +
  "看起来 应该 可能 其实 非常 简单 复杂 快 慢 更好 检查 运行 启动 重启 停止 安装 更新"
).split(" ")

const TOOLS = ["bash", "read", "write", "edit", "memory", "webfetch"] as const
const FILES = ["src/main.ts", "src/layers/Sqlite.ts", "docker-compose.yml", "README.md", "package.json", "notes/todo.md"]

/** Index into `words` with a Zipf-like bias towards the front of the list. */
const zipf = (rand: () => number, n: number): number => Math.min(n - 1, Math.floor(n * rand() ** 2.2))

const logUniform = (rand: () => number, lo: number, hi: number): number =>
  Math.round(Math.exp(Math.log(lo) + rand() * (Math.log(hi) - Math.log(lo))))

const englishSentence = (rand: () => number): string => {
  const n = 5 + Math.floor(rand() * 14)
  const words: Array<string> = []
  for (let i = 0; i < n; i++) words.push(EN[zipf(rand, EN.length)] ?? "the")
  const r = rand()
  if (r < 0.01) words.splice(Math.floor(rand() * words.length), 0, "connection", "refused")
  else if (r < 0.04) words.push("in", FILES[Math.floor(rand() * FILES.length)] ?? "README.md")
  const first = words[0] ?? "ok"
  words[0] = first.charAt(0).toUpperCase() + first.slice(1)
  const end = rand()
  return words.join(" ") + (end < 0.8 ? "." : end < 0.93 ? "?" : "!")
}

const chineseSentence = (rand: () => number): string => {
  const n = 4 + Math.floor(rand() * 10)
  let s = ""
  for (let i = 0; i < n; i++) {
    // Chinese chat mixes in English technical words now and then.
    s += rand() < 0.08 ? ` ${EN[40 + Math.floor(rand() * 40)] ?? "docker"} ` : ZH[zipf(rand, ZH.length)] ?? "好的"
  }
  return s.trim() + (rand() < 0.85 ? "。" : "？")
}

/** Text of about `target` characters (never cut mid-character), with the rare word planted at its rate. */
const prose = (rand: () => number, target: number, chinese: boolean): string => {
  let s = ""
  while (s.length < target) s += (s.length > 0 && !chinese ? " " : "") + (chinese ? chineseSentence(rand) : englishSentence(rand))
  s = s.slice(0, target).trimEnd()
  if (rand() < 1 / 25_000) s += " The zeppelin note is here."
  return s.length > 0 ? s : "ok"
}

const toolOutput = (rand: () => number, target: number): string => {
  const lines: Array<string> = []
  let size = 0
  while (size < target) {
    const r = rand()
    const line = r < 0.3
      ? `${FILES[Math.floor(rand() * FILES.length)] ?? "a.ts"}:${1 + Math.floor(rand() * 400)}: ${englishSentence(rand)}`
      : r < 0.5
      ? `[${new Date(1_700_000_000_000 + Math.floor(rand() * 1e9)).toISOString()}] INFO ${englishSentence(rand)}`
      : englishSentence(rand)
    lines.push(line)
    size += line.length + 1
  }
  return lines.join("\n").slice(0, target)
}

export interface TranscriptOptions {
  readonly seed: number
  /** First `createdAt` (ms); messages are 5 s to 2 min apart. */
  readonly startAt?: number
  /** Share of chat messages written in Chinese. */
  readonly chineseRate?: number
  /** Share of assistant turns that call tools. */
  readonly toolRate?: number
}

/** An endless, deterministic conversation; `take(n)` returns the next `n` messages. */
export const makeTranscript = (options: TranscriptOptions) => {
  const rand = prng(options.seed)
  const chineseRate = options.chineseRate ?? 0.07
  const toolRate = options.toolRate ?? 0.25
  let now = options.startAt ?? 1_700_000_000_000
  let toolIds = 0
  const pending: Array<NewMessage> = []

  const at = () => (now += 5_000 + Math.floor(rand() * 115_000))
  const chat = (lo: number, hi: number) => prose(rand, logUniform(rand, lo, hi), rand() < chineseRate)

  /** One exchange: a user message, then an assistant turn that may run a chain of tool calls. */
  const exchange = () => {
    pending.push({ role: "user", content: chat(20, 800), createdAt: at() })
    if (rand() < toolRate) {
      const rounds = 1 + Math.floor(rand() * rand() * 4)
      for (let r = 0; r < rounds; r++) {
        const calls = rand() < 0.8 ? 1 : 2
        const blocks: Array<ContentBlock> = rand() < 0.7 ? [{ type: "text", text: chat(20, 300) }] : []
        const results: Array<ContentBlock> = []
        for (let c = 0; c < calls; c++) {
          const id = `toolu_${options.seed}_${++toolIds}`
          const name = TOOLS[Math.floor(rand() * TOOLS.length)] ?? "bash"
          const input = name === "bash"
            ? { command: rand() < 0.4 ? "docker ps -a" : `grep -rn ${EN[zipf(rand, EN.length)] ?? "x"} src/` }
            : { path: FILES[Math.floor(rand() * FILES.length)] ?? "a.ts" }
          blocks.push({ type: "tool_use", id, name, input })
          results.push({ type: "tool_result", tool_use_id: id, content: toolOutput(rand, logUniform(rand, 50, 2000)) })
        }
        pending.push({ role: "assistant", content: blocks, createdAt: at() })
        pending.push({ role: "tool_result", content: results, createdAt: at() })
      }
    }
    pending.push({ role: "assistant", content: chat(40, 2000), createdAt: at() })
  }

  return {
    take: (n: number): Array<NewMessage> => {
      while (pending.length < n) exchange()
      return pending.splice(0, n)
    }
  }
}
