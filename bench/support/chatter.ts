/**
 * Conversational filler for the retrieval evaluation (bench/retrieval.ts): the everyday turns that
 * surround the planted facts: small talk, errands, cooking, work, travel daydreams, writing help,
 * some coding with tool calls (`tool_use` + `tool_result`), and about one message in ten in Chinese.
 *
 * The filler shares the everyday vocabulary of the questions ("remember", "trip", "flight", "meeting",
 * "server", "port", "my sister", 会议, 密码 …) so that those words are no free signal. Each user also
 * has a world (`World`): the people, cities and projects of their facts come back all through the
 * filler, as in a real life (a friend is mentioned many times, one message says where she moved), so
 * a name alone does not find the answer. Filler lines about the world never say anything a question
 * asks about (no moves, jobs, dates, times, prices or ports of those people and projects), and
 * ports, codes and amounts in the filler come from ranges the facts do not use, so no filler message
 * can answer a question by accident.
 */
import type { ContentBlock, NewMessage } from "../../src/domain/message.ts"

export type Rand = () => number

export const pick = <A>(rand: Rand, xs: ReadonlyArray<A>): A => {
  const x = xs[Math.floor(rand() * xs.length)]
  if (x === undefined) throw new Error("pick from an empty list")
  return x
}

export const between = (rand: Rand, lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1))

export const shuffle = <A>(rand: Rand, xs: ReadonlyArray<A>): Array<A> => {
  const out = [...xs]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    const a = out[i]
    const b = out[j]
    if (a !== undefined && b !== undefined) {
      out[i] = b
      out[j] = a
    }
  }
  return out
}

/** The people, cities and projects a user's facts are about (drawn from the facts' pools). */
export interface World {
  readonly names: ReadonlyArray<string>
  readonly cities: ReadonlyArray<string>
  readonly projects: ReadonlyArray<string>
}

/** Fills `{slot}`s; every slot is drawn afresh from its pool (the world's for `cast`, `place`, `repo`). */
const fill = (rand: Rand, template: string, world: World): string =>
  template.replace(/\{(\w+)\}/g, (_, slot: string) => {
    const pool = slot === "cast" ? world.names : slot === "place" ? world.cities : slot === "repo" ? world.projects : POOLS[slot]
    return pick(rand, pool !== undefined && pool.length > 0 ? pool : [`{${slot}}`])
  })

/** Disjoint from the facts' pools (see the header). */
const POOLS: Readonly<Record<string, ReadonlyArray<string>>> = {
  name: ["Sam", "Alex", "Chris", "Jordan", "Pat", "Robin", "Jamie", "Taylor", "Morgan", "Casey", "Dana", "Kim", "Max", "Noor"],
  city: ["London", "Paris", "Berlin", "New York", "Tokyo", "Rome", "Madrid", "Amsterdam", "Vienna", "Prague", "Dublin"],
  rel: ["mum", "dad", "sister", "brother", "cousin", "aunt", "neighbour", "boss", "best friend"],
  day: ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the weekend", "next week"],
  hour: ["1", "2", "3", "half past one", "four in the morning"],
  dish: ["a lentil curry", "pasta with pesto", "a mushroom risotto", "tacos", "a big salad", "ramen", "shakshuka", "banana bread"],
  show: ["that new detective series", "the documentary about whales", "a Korean drama", "the cooking competition", "an old western"],
  book: ["Project Hail Mary", "The Remains of the Day", "Piranesi", "a book about habits", "a thriller from the airport"],
  thing: ["autumn leaves", "the morning commute", "a cup of tea", "rainy Sundays", "an old bicycle", "the sea"],
  km: ["5", "7", "8", "10", "12"],
  n: ["20", "30", "50", "80", "100"],
  task: ["the quarterly report", "the budget spreadsheet", "a slide deck", "the onboarding notes", "the newsletter"],
  proj: ["webshop", "dashboard", "blog", "api", "landing-page", "scheduler"]
}

const USER_EN: ReadonlyArray<string> = [
  "Morning! Slept badly again, the neighbours had a party until {hour}.",
  "Can you help me write a short email to {name} about moving our call to {day}?",
  "I'm thinking of making {dish} tonight, any tips?",
  "The weather here is awful today, rain all day and my umbrella broke.",
  "Just finished watching {show}, the ending was strange.",
  "What's a good way to stay focused when working from home?",
  "Remind me to water the plants tomorrow.",
  "I had lunch with {name} today, we talked about work for hours.",
  "My {rel} called to ask about the weekend plans, nothing special.",
  "How long should I boil eggs for soft yolks?",
  "I'd love to visit {city} one day, what would you see there in a week?",
  "Work was hectic, three meetings back to back and a deadline on {day}.",
  "Do you remember the name of that podcast about history? Never mind, I found it.",
  "What's the time difference between here and {city}?",
  "I need a birthday gift idea for a coworker, budget around {n} euros.",
  "Our team is planning an offsite, maybe in {city}, nothing decided.",
  "I went for a run this morning, {km} km, my legs are dead.",
  "Any book recommendations? I liked {book}.",
  "Which is healthier, rice or quinoa?",
  "My flight got delayed again last month, airlines are a mess.",
  "Write a haiku about {thing}.",
  "Can you help me plan my week? I have {task} due and a dentist check-up to book at some point.",
  "I keep forgetting passwords, is a password manager worth it?",
  "What should I cook for six people on a budget?",
  "Give me three ideas for a rainy weekend with kids.",
  "How do I politely decline a meeting invitation?",
  "I'm trying to drink less coffee, any advice?",
  "Can you explain what an index fund is, in simple words?",
  "Ugh, the train was cancelled again, I worked from a café instead.",
  "I finally cleaned the garage. Found my old skateboard!",
  "Tell me something interesting about octopuses.",
  "Should I learn Spanish or Italian first?",
  "I have to finish {task} before {day}, can you make me a checklist?",
  "What's a good stretch for a stiff neck?",
  "Can you translate 'see you next week' into French and German?",
  "I'm bored. Suggest a short hobby project for the evening.",
  "My {rel} wants to start a vegetable garden, what grows easily?",
  "How many hours of sleep do adults actually need?",
  "We watched {show} at {name}'s place last night, it was fine.",
  "Is it worth getting travel insurance for a short trip?"
]

/** Everyday lines about the user's world; none says where, when, what job, what price or which port. */
const USER_WORLD: ReadonlyArray<string> = [
  "{cast} sent me a funny video of a goat.",
  "{cast} says hi, by the way.",
  "Talked to {cast} on the phone for ages last night.",
  "{cast} recommended {book}, have you heard of it?",
  "Made {dish} with {cast} yesterday, it was a mess but fun.",
  "{cast} thinks I should get more sleep. Probably right.",
  "I'm helping {cast} with a cover letter, can you make this paragraph sound less stiff?",
  "{cast} and I watched {show}, neither of us liked it.",
  "Can you suggest a small thank-you gift for {cast}? Nothing expensive.",
  "{cast} keeps sending me memes at 2 am.",
  "Had a long chat with {cast} about the state of the world.",
  "{cast} borrowed my drill and still hasn't given it back.",
  "I'd love to visit {place} one day, what is it known for?",
  "Saw a documentary about {place} last night, gorgeous old streets.",
  "What's the weather usually like in {place}?",
  "Is {place} expensive for tourists?",
  "{cast} told me a long story about a lost suitcase, I'll spare you the details."
]


const ASSISTANT_OPEN = ["Sure!", "Good question.", "Here's what I'd suggest.", "Happy to help.", "Of course.", "Let's see."]
const ASSISTANT_BODY: ReadonlyArray<string> = [
  "A simple approach is to break the task into smaller steps and start with the hardest one while you are fresh.",
  "Most people find that a fixed routine helps more than willpower does.",
  "If you have the time, it is worth trying both options for a week and comparing how you feel.",
  "Keep it simple at first; you can always add more later once the basics work.",
  "A short walk after lunch is one of the easiest ways to get your energy back in the afternoon.",
  "For a group of six, one big pot of something is cheaper and less stressful than several dishes.",
  "I would write it short and friendly, say what changes and offer an alternative time.",
  "The main thing is to be consistent; small daily steps add up surprisingly fast.",
  "Many travellers recommend staying near the old town so that you can walk almost everywhere.",
  "If the weather is bad, museums and covered markets are good fallbacks in most cities.",
  "That depends a bit on your budget, but there are good options at every price.",
  "I can draft a version for you and you can adjust the tone afterwards.",
  "Try to leave some buffer in the plan, because things almost always take longer than expected.",
  "Writing down three priorities for the day usually works better than a long to-do list.",
  "For soft yolks, six and a half minutes in boiling water and then straight into cold water works well.",
  "A password manager is worth it: one strong master password and unique passwords everywhere else.",
  "Octopuses have three hearts and blue blood, and each arm has a lot of its own neurons.",
  "Index funds simply follow a whole market, so fees stay low and you do not have to pick winners.",
  "Adults usually need between seven and nine hours of sleep, though it varies a little.",
  "Spanish is often said to be a little easier to start with, but pick the one you will actually use.",
  "For a stiff neck, slow chin tucks and gentle side stretches held for thirty seconds help most people."
]
const ASSISTANT_CLOSE = ["Let me know if you want more detail.", "Want me to turn this into a checklist?", "Hope that helps!", ""]

const USER_ZH: ReadonlyArray<string> = [
  "今天下雨，不想出门，在家看了一天电影。",
  "帮我写一封邮件给同事，说会议改到下周。",
  "晚上吃什么好？想做个简单的汤。",
  "最近工作太忙了，周末想好好休息一下。",
  "推荐几部好看的电影吧，最好是喜剧。",
  "明天早上提醒我交报告。",
  "我又忘了邮箱密码，只好重置了一下。",
  "周末和朋友去爬山了，风景很好，就是有点累。",
  "怎么才能早点睡觉？每天都熬夜。",
  "上海最近天气怎么样？好久没去了。",
  "帮我想一个生日礼物，预算两百块左右。",
  "公司的会议室总是订不到，好烦。",
  "我想学做饭，从哪道菜开始比较好？"
]
const ASSISTANT_ZH: ReadonlyArray<string> = [
  "好的，没问题。可以先把任务拆成几个小步骤，一步一步来。",
  "建议早点休息，睡前少看手机，会有帮助的。",
  "可以试试番茄炒蛋，简单又好吃，新手也很容易上手。",
  "我帮你写了一个草稿，你看看语气合不合适。",
  "周末好好放松一下吧，工作的事情下周再说。",
  "可以考虑一些实用的小礼物，比如保温杯或者一本好书。"
]

export interface Filler {
  /** One everyday exchange: a user message and the assistant's answer, sometimes with tool calls. */
  readonly exchange: () => Array<NewMessage>
  /** A sentence of small talk, to pad a message that carries a fact. */
  readonly sentence: () => string
  /** A short acknowledgement the assistant gives to news (never restates the news). */
  readonly ack: () => string
  /** A generic assistant answer (advice, never about the user's own facts). */
  readonly reply: () => string
}

const ACKS = [
  "Thanks for telling me, I'll keep that in mind.",
  "Noted!",
  "That's good to know.",
  "Oh nice, thanks for the update.",
  "Got it. Anything you'd like me to do with that?",
  "Understood, I've made a note of it.",
  "Okay! Let me know if you need help with anything around it."
]

export const makeFiller = (
  rand: Rand,
  world: World,
  options: { readonly seed: number; readonly chineseRate: number; readonly toolRate: number; readonly worldRate: number }
): Filler => {
  let toolIds = 0
  const line = () => fill(rand, pick(rand, rand() < options.worldRate ? USER_WORLD : USER_EN), world)
  const assistantEn = () => {
    const parts = [pick(rand, ASSISTANT_OPEN)]
    parts.push(...shuffle(rand, ASSISTANT_BODY).slice(0, between(rand, 1, 6)))
    parts.push(pick(rand, ASSISTANT_CLOSE))
    return parts.filter((p) => p.length > 0).join(" ")
  }
  const toolTurn = (): Array<NewMessage> => {
    const id = `toolu_f${options.seed}_${++toolIds}`
    const proj = pick(rand, world.projects.length > 0 ? world.projects : (POOLS["proj"] ?? []))
    // [request, command, output]: what the user asks, what the assistant runs, what comes back.
    const calls: ReadonlyArray<readonly [string, string, string]> = [
      [`Run the tests for ${proj} and tell me what's broken.`, "npm test", `> ${proj}@1.0.0 test\n> vitest run\n\n Test Files  ${between(rand, 8, 40)} passed\n      Tests  ${between(rand, 50, 400)} passed\n   Duration  ${between(rand, 2, 30)}.${between(rand, 1, 9)}s`],
      ["What's taking up disk space on the server?", "df -h /", `Filesystem      Size  Used Avail Use% Mounted on\n/dev/vda1        80G   ${between(rand, 20, 70)}G   ${between(rand, 5, 50)}G  ${between(rand, 30, 88)}% /`],
      ["Which containers are running right now?", "docker ps --format '{{.Names}} {{.Status}}'", `${proj}-web Up ${between(rand, 2, 40)} hours\n${proj}-db Up ${between(rand, 2, 40)} hours\nredis Up ${between(rand, 1, 9)} days`],
      [`Show me the git status of the ${proj} repo.`, "git status --short", ` M src/index.ts\n M package.json\n?? notes/todo.md`],
      [`Can you check why the build is failing on the ${proj} project?`, `npm run build --prefix ${proj}`, `> ${proj}@1.0.0 build\n> tsc -p .\n\nsrc/util.ts(${between(rand, 10, 200)},5): error TS2322: Type 'string' is not assignable to type 'number'.`],
      [`Can you look at the logs of the ${proj} service?`, `tail -n 3 /var/log/${proj}.log`, `[info] worker started, pid ${between(rand, 100, 999)}\n[info] connected to database\n[warn] slow request GET /health ${between(rand, 200, 900)}ms`],
      [`The ${proj} dev server feels slow today, any idea why?`, "uptime", ` 10:${between(rand, 10, 59)}:01 up ${between(rand, 2, 90)} days,  load average: ${between(rand, 1, 4)}.${between(rand, 10, 99)}, 1.02, 0.87`],
      [`Did the ${proj} deploy go out yesterday?`, `git log -1 --format=%cd origin/main`, `Mon Mar ${between(rand, 2, 28)} 17:${between(rand, 10, 59)}:12 2026 +0100`]
    ]
    const [request, command, output] = pick(rand, calls)
    const blocks: Array<ContentBlock> = [
      { type: "text", text: "Let me check." },
      { type: "tool_use", id, name: "bash", input: { command } }
    ]
    return [
      { role: "user", content: request },
      { role: "assistant", content: blocks },
      { role: "tool_result", content: [{ type: "tool_result", tool_use_id: id, content: output }] },
      { role: "assistant", content: `${pick(rand, ["Here's what I found.", "Done.", "Looks like this:"])} ${assistantEn()}` }
    ]
  }
  const exchange = (): Array<NewMessage> => {
    const r = rand()
    if (r < options.chineseRate) {
      return [{ role: "user", content: pick(rand, USER_ZH) }, { role: "assistant", content: pick(rand, ASSISTANT_ZH) }]
    }
    if (r < options.chineseRate + options.toolRate) return toolTurn()
    const n = rand() < 0.7 ? 1 : 2
    const user = Array.from({ length: n }, line).join(" ")
    return [{ role: "user", content: user }, { role: "assistant", content: assistantEn() }]
  }
  return {
    exchange,
    sentence: () => fill(rand, pick(rand, USER_EN), world),
    ack: () => pick(rand, ACKS),
    reply: assistantEn
  }
}
