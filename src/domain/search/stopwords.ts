/**
 * Words a ranked search leaves out of a question: they occur almost everywhere and would only add
 * noise (and cost) to the OR of the query's words. Strict search keeps every word. English words
 * are compared folded (lower case), CJK words as written.
 */

const ENGLISH = (
  "a about above after again against all also am an and any are aren't as at be because been before being below " +
  "between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each " +
  "either else ever few for from further get gets got had hadn't has hasn't have haven't having he he'd he'll he's " +
  "her here here's hers herself him himself his how how's however i i'd i'll i'm i've if in into is isn't it it's its " +
  "itself just let's me might more most must mustn't my myself no nor not of off on once only or other ought our ours " +
  "ourselves out over own please same shall shan't she she'd she'll she's should shouldn't so some such than that " +
  "that's the their theirs them themselves then there there's these they they'd they'll they're they've this those " +
  "through to too under until up upon us very was wasn't we we'd we'll we're we've were weren't what what's when " +
  "when's where where's whether which while who who's whom whose why why's will with won't would wouldn't yes yet " +
  "you you'd you'll you're you've your yours yourself yourselves tell know remember recall ever anything something"
).split(" ")

/** Particles, pronouns and question words of Chinese and Japanese. */
const CJK = (
  "的 了 是 在 和 与 及 或 吗 呢 吧 啊 呀 也 就 都 而 着 过 把 被 让 给 对 从 向 于 之 其 这 那 哪 谁 我 你 您 他 她 它 " +
  "我们 你们 他们 她们 它们 咱们 什么 怎么 怎样 为什么 哪里 哪儿 哪个 哪些 这个 那个 这些 那些 一个 有 没有 是否 " +
  "如何 多少 几 时候 什么时候 的时候 吗 呢 请 告诉 知道 记得 曾经 还 又 很 非常 " +
  "は が を に で と の も へ や か から まで より です ます でした ました ですか ますか それ これ あれ どこ だれ 誰 いつ なに 何 " +
  "どう どの した する して いる ある"
).split(" ")

const ENGLISH_SET: ReadonlySet<string> = new Set(ENGLISH.flatMap((w) => [w, w.replaceAll("'", "")]))
const CJK_SET: ReadonlySet<string> = new Set(CJK)

/** Whether `word` (as typed) is a stop word. */
export const isStopWord = (word: string): boolean =>
  ENGLISH_SET.has(word.toLowerCase().replaceAll("\u2019", "'")) || CJK_SET.has(word)
