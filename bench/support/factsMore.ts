/**
 * Planted facts, continued (see facts.ts): tool output (assistant `tool_use` + `tool_result`, the
 * answer in the result), Chinese (natural questions without spaces, ASCII glued to Chinese, two-character
 * terms), and mixed facts that span two turns (stated, then completed or corrected in the next turn)
 * or switch language mid-sentence.
 */
import type { Gen, Template, Turn } from "./facts.ts"
import { assistant, clock, toolResult, user, weekday } from "./facts.ts"

/** A request, the assistant's tool call, its result (the evidence) and a short reply. */
const toolFact = (g: Gen, request: string, tool: string, input: Record<string, string>, output: string, reply: string): Array<Turn> => {
  const id = g.toolId()
  return [
    user(request, false),
    assistant([{ type: "text", text: "On it." }, { type: "tool_use", id, name: tool, input }]),
    toolResult(id, output),
    assistant(reply)
  ]
}

export const TOOLS: ReadonlyArray<Template> = [
  {
    id: "dev-port",
    category: "tool output",
    make: (g) => {
      const [proj, port] = [g.take("proj"), g.num(40_000, 49_999)]
      return {
        turns: toolFact(
          g,
          `Can you start the ${proj} dev server?`,
          "bash",
          { command: `cd ~/code/${proj} && npm run dev` },
          `> ${proj}@0.3.0 dev\n> vite\n\n  VITE v5.2.0  ready in ${g.num(200, 900)} ms\n\n  ➜  Local:   http://localhost:${port}/\n  ➜  Network: use --host to expose`,
          "It's running."
        ),
        questions: [`What port is the ${proj} dev server on?`, `Which localhost address did ${proj} come up at?`],
        distractors: [`The ${proj} dev server keeps crashing when I save files.`]
      }
    }
  },
  {
    id: "backup-error",
    category: "tool output",
    make: (g) => {
      const [proj, code] = [g.take("proj"), g.num(1000, 9999)]
      return {
        turns: toolFact(
          g,
          `Please run the nightly backup for ${proj} by hand.`,
          "bash",
          { command: "./scripts/backup.sh --target nightly" },
          `backup: uploading 1,204 files to s3://${proj}-archive\nERROR upload failed: code BKP-${code} (bucket quota exceeded)\nexit status 3`,
          "That didn't work, see the output. Want me to look into it?"
        ),
        questions: [`What error code did the ${proj} backup fail with?`, `Which bucket was the backup uploading to?`, `Why did the backup fail?`],
        distractors: [`How often should the ${proj} backup run?`, `Is the nightly backup still on for ${proj}?`]
      }
    }
  },
  {
    id: "find-file",
    category: "tool output",
    make: (g) => {
      const proj = g.take("proj")
      const [file, kind] = g.pick([["settings.local.yaml", "settings"], ["credentials.json", "credentials"], ["nginx.conf", "nginx config"]] as const)
      return {
        turns: toolFact(
          g,
          `I can't find the ${kind} file, can you look for it?`,
          "bash",
          { command: `find ~ -name '${file}' 2>/dev/null` },
          `/home/me/projects/${proj}/deploy/${g.pick(["prod", "staging", "local"])}/${file}`,
          "Found it."
        ),
        questions: [`Where is the ${kind} file of ${proj}?`, `Which folder has the ${kind} file?`],
        distractors: [`I keep losing track of where config files live.`]
      }
    }
  },
  {
    id: "container-ip",
    category: "tool output",
    make: (g) => {
      const svc = g.pick(["postgres", "mailhog", "keycloak", "minio", "grafana"])
      return {
        turns: toolFact(
          g,
          `What address did the ${svc} container get?`,
          "bash",
          { command: `docker inspect ${svc} --format '{{.Name}} {{.NetworkSettings.IPAddress}}'` },
          `/${svc} 172.18.0.${g.num(2, 250)}`,
          "There you go."
        ),
        questions: [`What IP does the ${svc} container have?`, `Which IP address is ${svc} on?`],
        distractors: [`The ${svc} container is using a lot of memory.`]
      }
    }
  },
  {
    id: "cert-expiry",
    category: "tool output",
    make: (g) => {
      const domain = `${g.pick(["shop", "mail", "wiki", "status", "api"])}.${g.pick(["nordlicht", "bluefin", "kettle"])}.io`
      return {
        turns: toolFact(
          g,
          `Is the certificate of ${domain} still okay?`,
          "bash",
          { command: `echo | openssl s_client -connect ${domain}:443 2>/dev/null | openssl x509 -noout -subject -enddate` },
          `subject=CN = ${domain}\nnotAfter=${g.pick(["Jan", "Apr", "Jun", "Sep", "Nov"])} ${g.num(1, 28)} 12:00:00 2027 GMT`,
          "Still valid for a while."
        ),
        questions: [`When does the TLS cert for ${domain} expire?`, `Until when is ${domain} valid?`],
        distractors: [`Is Let's Encrypt good enough for ${domain}?`]
      }
    }
  },
  {
    id: "failing-test",
    category: "tool output",
    make: (g) => {
      const [proj, mod] = [g.take("proj"), g.pick(["invoice", "rounding", "timezone", "parser", "checkout"])]
      return {
        turns: toolFact(
          g,
          `Run the ${proj} tests please.`,
          "bash",
          { command: "npm test" },
          `> ${proj}@2.1.0 test\n> vitest run\n\n FAIL  src/${mod}.test.ts > ${mod} handles empty input\n   AssertionError: expected ${g.num(10, 99)} to equal ${g.num(100, 999)}\n\n Tests  1 failed | ${g.num(150, 400)} passed`,
          "One failure."
        ),
        questions: [`Which test was failing in ${proj}?`, `What was the assertion error in the ${mod} test?`],
        distractors: [`The ${proj} test suite is getting slow.`]
      }
    }
  },
  {
    id: "schema-version",
    category: "tool output",
    make: (g) => {
      const proj = g.take("proj")
      return {
        turns: toolFact(
          g,
          `Apply the pending migrations on ${proj}.`,
          "bash",
          { command: "npm run migrate" },
          `Applied 3 migrations\nschema version: ${g.num(40, 140)} (${proj}_db)`,
          "All applied."
        ),
        questions: [`What schema version is the ${proj} database at?`, `Which migration version is ${proj}_db on now?`],
        distractors: [`Do we need a new migration for ${proj}?`]
      }
    }
  },
  {
    id: "opening-hours",
    category: "tool output",
    make: (g) => {
      const museum = g.pick(["Vasa Museum", "Design Museum", "Museum of Illusions", "Natural History Museum"])
      return {
        turns: toolFact(
          g,
          `Can you check when the ${museum} opens?`,
          "webfetch",
          { url: `https://${museum.toLowerCase().replaceAll(" ", "-")}.example/visit` },
          `${museum}. Opening hours: Tue to Sun ${g.num(9, 10)}:00 to ${g.num(17, 19)}:00, closed Mondays. Tickets €${g.num(12, 25)}.`,
          "Here you go."
        ),
        questions: [`When can I visit the ${museum}?`, `How much is a ticket for the ${museum}?`],
        distractors: [`Is the ${museum} worth visiting?`]
      }
    }
  }
]

const ZH_CITIES = ["成都", "杭州", "厦门", "青岛", "大理", "西安", "苏州", "昆明", "长沙", "哈尔滨"]
const ZH_DAYS = ["周一", "周二", "周三", "周四", "周五", "周六"]
const ZH_TIMES = ["上午十点", "下午两点", "下午三点半", "晚上七点"]

export const CHINESE: ReadonlyArray<Template> = [
  {
    id: "zh-fact-id",
    category: "Chinese",
    make: (g) => {
      const [n, bucket] = [g.num(1000, 9999), `oss-hz-backup-${g.num(10, 99)}`]
      return {
        turns: [user(`记住FACT-${n}备份存储桶是${bucket}`), assistant("好的，记下了。")],
        questions: [`FACT-${n}对应的存储桶是哪个？`, `What bucket is FACT-${n}?`, `备份用的是哪个桶来着？`],
        distractors: [`备份的事情下周再说。`]
      }
    }
  },
  {
    id: "zh-ticket",
    category: "Chinese",
    make: (g) => {
      const [n, name] = [g.num(100, 999), g.take("zhName")]
      return {
        turns: [user(`记一下：TICKET-${n}的负责人是${name}，有问题找他。`), assistant("好的。")],
        questions: [`TICKET-${n}谁负责？`, `Who owns TICKET-${n}?`],
        distractors: [`TICKET-${n}还没处理完。`]
      }
    }
  },
  {
    id: "zh-move",
    category: "Chinese",
    make: (g) => {
      const [name, city] = [g.take("zhName"), g.pick(ZH_CITIES)]
      return {
        turns: [user(`我妹妹${name}下个月搬到${city}了，她说那边生活节奏慢。`), assistant("挺好的，换个环境也不错。")],
        questions: [`我妹妹搬去哪个城市了？`, `${name}以后住在哪里？`],
        distractors: [`我妹妹最近在收拾东西，挺累的。`]
      }
    }
  },
  {
    id: "zh-allergy",
    category: "Chinese",
    make: (g) => ({
      turns: [user(`我对${g.pick(["花生", "芒果", "海鲜", "牛奶"])}过敏，点菜的时候帮我注意一下。`), assistant("好的，我会注意的。")],
      questions: [`我对什么过敏来着？`, `点菜要避开什么？`],
      hard: [`我有哪些饮食禁忌？`],
      distractors: [`今天点的外卖有点辣。`]
    })
  },
  {
    id: "zh-dentist",
    category: "Chinese",
    make: (g) => ({
      turns: [user(`${g.pick(ZH_DAYS)}${g.pick(ZH_TIMES)}要去看牙医，别让我忘了。`), assistant("好的，到时候提醒你。")],
      questions: [`我什么时候去看牙医？`, `牙医预约是哪天？`],
      hard: [`我哪天要去检查牙齿？`],
      distractors: [`我最怕看牙医了。`]
    })
  },
  {
    id: "zh-wifi",
    category: "Chinese",
    make: (g) => ({
      turns: [user(`家里的WiFi密码改成了${g.pick(["sunflower", "maple", "tiger"])}${g.num(1000, 9999)}，记一下。`), assistant("记好了。")],
      questions: [`家里无线网密码是多少？`, `What's the home WiFi password now?`],
      distractors: [`邮箱密码又过期了。`]
    })
  },
  {
    id: "zh-meeting",
    category: "Chinese",
    make: (g) => {
      const company = g.pick(["华远科技", "星河物流", "蓝海传媒", "Acme"])
      return {
        turns: [user(`跟${company}的会议改到${g.pick(ZH_DAYS)}${g.pick(ZH_TIMES)}了。`), assistant("收到。")],
        questions: [`和${company}开会是哪天？`],
        distractors: [`${company}那边还没回复邮件。`]
      }
    }
  },
  {
    id: "zh-coriander",
    category: "Chinese",
    make: (g) => ({
      turns: [user(`我不吃香菜，一点都不行，做菜别放。`), assistant(g.pick(["明白了。", "好的，记住了。"]))],
      questions: [`我有什么不吃的吗？`, `做菜的时候要注意什么？`],
      hard: [`点外卖时我有什么忌口？`],
      distractors: [`今天做了番茄炒蛋，挺好吃的。`]
    })
  },
  {
    id: "zh-checkup",
    category: "Chinese",
    make: (g) => ({
      turns: [user(`${g.pick(ZH_DAYS)}上午去医院体检，要空腹。`), assistant("好的，前一天晚上早点吃饭。")],
      questions: [`体检是哪天？`, `我哪天要空腹去医院？`],
      distractors: [`最近睡得不好，想去医院看看。`]
    })
  },
  {
    id: "zh-birthday",
    category: "Chinese",
    make: (g) => {
      const name = g.take("zhName")
      return {
        turns: [user(`${name}的生日是${g.num(1, 12)}月${g.num(1, 28)}号，到时候提醒我买礼物。`), assistant("好的。")],
        questions: [`${name}生日是哪天？`, `我要给谁买生日礼物？`],
        distractors: [`${name}说不想过生日。`]
      }
    }
  },
  {
    id: "zh-port",
    category: "Chinese",
    make: (g) => {
      const [proj, port] = [g.take("proj"), g.num(40_000, 49_999)]
      const id = g.toolId()
      return {
        turns: [
          user(`帮我看一下${proj}服务跑在哪个端口。`, false),
          assistant([{ type: "tool_use", id, name: "bash", input: { command: `ss -ltnp | grep ${proj}` } }]),
          toolResult(id, `LISTEN 0 511 0.0.0.0:${port} 0.0.0.0:* users:(("${proj}",pid=${g.num(1000, 30000)},fd=18))`),
          assistant(`${proj}服务在${port}端口上运行。`, true)
        ],
        questions: [`${proj}的端口是多少来着？`, `Which port is ${proj} listening on?`],
        distractors: [`${proj}服务最近有点慢。`]
      }
    }
  }
]

export const MIXED: ReadonlyArray<Template> = [
  {
    id: "reminder-time",
    category: "mixed",
    make: (g) => {
      const [name, event] = [g.take("name"), g.pick(["recital", "graduation", "farewell party", "housewarming"])]
      return {
        turns: [
          user(`Remind me: ${name} has a ${event} on ${weekday(g)}.`),
          assistant("Sure. What time does it start?"),
          user(`${clock(g)}, at ${g.pick(["the town hall", "their new place", "the school gym"])}.`)
        ],
        questions: [`What time is ${name}'s ${event}?`, `Which day is the ${event} for ${name}?`],
        distractors: [`${name} is excited about the ${event}.`]
      }
    }
  },
  {
    id: "booking-choice",
    category: "mixed",
    make: (g) => {
      const [purpose, a, b] = g.pick([
        ["team dinner", "the tapas bar", "the Thai place on Main Street"],
        ["weekend away", "the lake cabin", "the farm cottage"],
        ["birthday venue", "the bowling alley", "the rooftop bar"]
      ] as const)
      const [first, second] = g.rand() < 0.5 ? [a, b] : [b, a]
      return {
        turns: [
          user(`Should I book ${first} or ${second} for the ${purpose}?`, false),
          assistant(`For the ${purpose} I'd go with ${second}, it's easier for everyone to get to.`, true),
          user(`Done, ${second} is booked.`)
        ],
        questions: [`Which place did I end up booking for our ${purpose}?`, `Where is the ${purpose} going to be?`],
        distractors: [`Everyone has different opinions about the ${purpose}.`]
      }
    }
  },
  {
    id: "correction",
    category: "mixed",
    make: (g) => {
      const name = g.take("name")
      return {
        turns: [
          user(`The meeting with ${name} is on Monday.`),
          assistant(g.ack(), false),
          user("Sorry, I got that wrong: it's Tuesday, Monday is a public holiday.")
        ],
        questions: [`What day is my meeting with ${name}?`, `When am I meeting ${name}?`],
        distractors: [`${name} sent the slides over, they look fine.`, `I need to prepare for the meeting with ${name}.`]
      }
    }
  },
  {
    id: "packing-list",
    category: "mixed",
    make: (g) => {
      const [city, item] = [g.take("city"), g.pick(["swimsuit", "travel adapter", "rain jacket", "camera"])]
      return {
        turns: [
          user(`Packing list for ${city}: passport, charger, hiking boots.`),
          assistant("Noted. Anything else?", false),
          user(`Oh, and add the ${item}.`)
        ],
        questions: [`What did I add to the ${city} packing list?`, `What am I packing for ${city}?`],
        distractors: [`I always overpack for trips.`, `Is it cold in ${city} this time of year?`]
      }
    }
  },
  {
    id: "gift",
    category: "mixed",
    make: (g) => {
      const [name, occasion] = [g.take("name"), g.pick(["birthday", "leaving do", "anniversary"])]
      const [gift, other] = g.pick([["a pasta machine", "a plant"], ["concert tickets", "a scarf"], ["a board game", "a cookbook"]] as const)
      return {
        turns: [
          user(`What should I get ${name} for the ${occasion}?`, false),
          assistant(`For ${name}'s ${occasion}, maybe ${gift} or ${other}.`, true),
          user(`Went with ${gift}, ${name} will love it.`)
        ],
        questions: [`What present did I buy for ${name}?`, `What did I get ${name} in the end?`],
        distractors: [`${name} is impossible to buy presents for.`]
      }
    }
  },
  {
    id: "code-switch",
    category: "mixed",
    make: (g) => {
      const [name, proj] = [g.take("name"), g.take("proj")]
      return {
        turns: [user(`Remind me: 明天${g.pick(ZH_TIMES)}跟${name}开会讨论${proj}的budget。`), assistant(g.ack())],
        questions: [`When is the budget meeting with ${name}?`, `我跟${name}什么时候开会？`],
        distractors: [`The ${proj} budget is tight this quarter.`]
      }
    }
  }
]

