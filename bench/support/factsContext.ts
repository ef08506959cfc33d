/**
 * Planted facts of issue 25, the kinds where plain BM25 fails (see facts.ts for the others):
 *
 * - **context** and **context (Chinese)**: an exchange where the topic words are in one turn (the
 *   assistant's "How's the new job going?", the user's "I finally went to see the dentist about that
 *   tooth") and the turn that answers (the evidence) holds the answer but none of the question's
 *   content words ("Monday was my first day, the team seems lovely", 他说要拔掉). The topic turn is
 *   right before the answer, two turns before it (a turn of no topic in between), or right after it
 *   (the assistant restating the news). The dataset's checks (retrievalData.ts) keep a question only
 *   when it shares no content word with its evidence and at least one with a turn at ±1..±2.
 * - **multi-hop**: the answer needs two turns, told far apart in the session (`later`: "my sister Ana
 *   lives in Lyon" … "I'm flying out to see my sister on Friday" → "Which city am I flying to on
 *   Friday?") or in one exchange split by a turn of the other side; every turn marked evidence is
 *   needed, and the evaluation reports "any evidence turn in the top k" and "all of them".
 *
 * Distractors reuse the topic words without the answer. Evidence turns are never padded with small
 * talk (a filler sentence could carry a question word and break the point of the kind).
 */
import { assistant, clock, type Gen, type Template, user, weekday } from "./facts.ts"

const MONTHS = ["March", "April", "May", "June", "September", "October"]
const ZH_DAYS = ["周一", "周二", "周三", "周四", "周五", "下周二", "下周四"]
const ZH_CITIES = ["成都", "杭州", "厦门", "青岛", "大理", "西安", "苏州", "昆明"]
const ZH_RANKS = ["第二", "第三", "第五", "第八"]

/** The topic turn right before the answer (near), or two turns before it with a turn of no topic between. */
const around = (g: Gen, near: string, far: readonly [string, string], answer: string) =>
  g.rand() < 0.5
    ? [assistant(near), user(answer), assistant(g.ack())]
    : [user(g.pad(far[0]), false), assistant(far[1]), user(answer)]

export const CONTEXT: ReadonlyArray<Template> = [
  {
    id: "ctx-new-job",
    category: "context",
    make: (g) => ({
      turns: around(
        g,
        g.pick(["How's the new job going so far?", "So, how's the new job?"]),
        ["Can I tell you about the new job?", "Of course, how is it?"],
        `${weekday(g)} was my first day, the team seems lovely.`
      ),
      questions: ["When did I start the new job?", "How long have I been at the new job?"],
      distractors: ["The new job means a much longer commute, ugh.", "Is it normal to feel this tired in a new job?"]
    })
  },
  {
    id: "ctx-dentist-tooth",
    category: "context",
    make: (g) => ({
      turns: around(
        g,
        "Did you ever get that tooth looked at by the dentist?",
        ["I finally went to see the dentist about that tooth.", "And? What's the verdict?"],
        `It has to come out, they've booked me in for ${weekday(g)} at ${clock(g)}.`
      ),
      questions: ["What did the dentist say about my tooth?", "When is the dentist pulling my tooth?"],
      distractors: ["My tooth is aching again, can't chew on that side.", "Why are dentists always so expensive?"]
    })
  },
  {
    id: "ctx-apartment",
    category: "context",
    make: (g) => {
      const name = g.take("name")
      return {
        turns: around(
          g,
          `Did ${name} find an apartment in the end?`,
          [`${name} was apartment hunting all weekend.`, "Any luck?"],
          `Yes! Two bedrooms near the river, ${g.num(9, 19)}00 a month.`
        ),
        questions: [`Has ${name} sorted out an apartment yet?`, `What's ${name}'s new apartment like?`],
        distractors: [`${name} says apartment prices are insane right now.`, `Apartment hunting with ${name} is exhausting.`]
      }
    }
  },
  {
    id: "ctx-car-garage",
    category: "context",
    make: (g) => ({
      turns: around(
        g,
        "Did the garage figure out what's wrong with the car?",
        ["Got the car back from the garage today.", "What was the problem in the end?"],
        `The clutch was worn through, ${g.num(4, 9)}${g.num(10, 99)} euros all in.`
      ),
      questions: ["What was wrong with my car?", "How much did I pay at the garage?"],
      distractors: ["The car needs new tyres before winter.", "Should I sell the car and just cycle?"]
    })
  },
  {
    id: "ctx-interview",
    category: "context",
    make: (g) => {
      const name = g.take("name")
      const answer = `They offered the position on the spot, first day in ${g.pick(MONTHS)}.`
      return {
        turns: around(g, `How did ${name}'s interview go?`, [`${name} had the big interview this morning.`, "Fingers crossed! Any news?"], answer),
        questions: [`Did ${name} get hired after the interview?`, `What happened with ${name}'s interview?`],
        distractors: [`${name} is preparing for another interview, poor thing.`, `Any tips I can pass on to ${name} for a job interview?`]
      }
    }
  },
  {
    id: "ctx-blood-test",
    category: "context",
    make: (g) => ({
      turns: around(
        g,
        "Did your blood test results come back?",
        ["Got my blood test results back.", "And? Anything to worry about?"],
        `Iron is a bit low, so I'm on supplements for ${g.num(4, 12)} weeks.`
      ),
      questions: ["What did my blood test show?", "What were my blood results?"],
      distractors: ["I hate needles, the blood test was awful.", "How long do blood test results usually take?"]
    })
  },
  {
    id: "ctx-flat-offer",
    category: "context",
    make: (g) => {
      const street = g.pick(["Elm", "Mill", "Station", "Harbour", "Orchard"])
      return {
        turns: around(
          g,
          `Any news on the flat on ${street} Road?`,
          [`We viewed the flat on ${street} Road yesterday.`, "Ooh, and? Did you like it?"],
          `Loved it. We put in an offer of ${g.num(210, 480)} thousand this morning.`
        ),
        questions: [`Did we go for the ${street} Road flat?`, `Where are we with the ${street} Road flat?`],
        distractors: [`The flat on ${street} Road has a tiny kitchen though.`, "Flat viewings are so stressful."]
      }
    }
  },
  {
    id: "ctx-speech",
    category: "context",
    make: (g) => {
      const name = g.take("name")
      return {
        turns: around(
          g,
          `How did your speech at ${name}'s wedding go?`,
          [`Gave the best man speech at ${name}'s wedding last night.`, "How did it land?"],
          "Nailed it, everyone cried at the bit about the camping trip."
        ),
        questions: [`How did the wedding speech for ${name} go?`, "What did people think of my wedding speech?"],
        distractors: [`Still writing my speech for ${name}'s wedding, help.`, "Is it okay to read a wedding speech from my phone?"]
      }
    }
  },
  {
    id: "ctx-laptop",
    category: "context",
    make: (g) => ({
      turns: around(
        g,
        "Did the repair shop look at your laptop?",
        ["My laptop died again this morning.", "Oh no. Is it the battery again?"],
        `Worse, the motherboard. They want ${g.num(180, 450)} euros to swap it.`
      ),
      questions: ["What's wrong with my laptop?", "How much is fixing the laptop going to be?"],
      distractors: ["My laptop fan is so loud lately.", "Should I back up my laptop before the update?"]
    })
  },
  {
    id: "ctx-exam",
    category: "context",
    make: (g) => {
      const subject = g.pick(["statistics", "French", "anatomy", "accounting"])
      return {
        turns: around(
          g,
          `Did you get your ${subject} exam back?`,
          [`The ${subject} exam results are out.`, "Don't keep me waiting!"],
          `A distinction, ${g.num(85, 98)} out of 100!`
        ),
        questions: [`What did I get in the ${subject} exam?`, `How did my ${subject} exam go?`],
        distractors: [`I should be revising for the ${subject} exam instead of chatting.`, `The ${subject} exam was brutal, no idea how I did.`]
      }
    }
  },
  {
    id: "ctx-plumber",
    category: "context",
    make: (g) => ({
      turns: around(
        g,
        "So the plumber came about the leak?",
        ["The plumber finally came about the leak.", "Was it serious?"],
        `A cracked pipe under the sink, sorted in an hour, ${g.num(90, 240)} euros.`
      ),
      questions: ["What was causing the leak?", "Why did we need a plumber?"],
      distractors: ["There's a damp patch on the ceiling, another leak?", "Plumbers never show up on time."]
    })
  },
  {
    id: "ctx-mum-visit",
    category: "context",
    make: (g) => ({
      turns: around(
        g,
        "How long is your mum staying this time?",
        ["My mum arrived last night!", "How lovely! How long is she here for?"],
        `Until ${weekday(g)} week, then she flies back.`
      ),
      questions: ["How long is my mum's visit?", "When is my mum leaving?"],
      distractors: ["My mum wants to cook every single meal while she's here.", "Where should I take my mum for dinner?"]
    })
  },
  {
    id: "ctx-promotion",
    category: "context",
    make: (g) => ({
      turns: around(
        g,
        "Any news about the promotion?",
        ["Had the promotion talk with my boss today.", "And? Don't leave me hanging."],
        `Got it! Team lead from ${g.pick(MONTHS)}, with a ${g.num(5, 15)} % raise.`
      ),
      questions: ["Did I get the promotion?", "When does my promotion kick in?"],
      distractors: ["Waiting to hear about the promotion is killing me.", "Should I ask for more money with the promotion?"]
    })
  },
  {
    id: "ctx-vet",
    category: "context",
    make: (g) => {
      const [pet, animal] = [g.take("pet"), g.take("animal")]
      return {
        turns: around(
          g,
          `Any word from the vet about ${pet}?`,
          [`Took ${pet} to the vet, the ${animal} keeps limping.`, "Poor thing. What did they say?"],
          "Just a thorn stuck in the paw, all better now."
        ),
        questions: [`Why was ${pet} limping?`, `What did the vet find with ${pet}?`],
        distractors: [`${pet} hates the car ride to the vet.`, `How often should a ${animal} see the vet?`]
      }
    }
  },
  {
    // The topic after the answer: the assistant names what the user's news was about.
    id: "ctx-quit",
    category: "context",
    make: (g) => {
      const org = g.take("org")
      return {
        turns: [user(`${weekday(g)} was my last day, handed in my badge and everything.`), assistant(`So you really quit ${org}! How does it feel?`)],
        questions: [`When did I quit my job at ${org}?`, `When did I leave the job at ${org}?`],
        distractors: [`Thinking about quitting ${org}, the hours are brutal.`, `${org} keeps sending me emails.`]
      }
    }
  },
  {
    id: "ctx-trip-weather",
    category: "context",
    make: (g) => {
      const city = g.take("city")
      return {
        turns: [
          user("Rained every single day, but the food made up for it."),
          assistant(`Sorry the ${city} trip was so wet! Glad it wasn't all bad.`)
        ],
        questions: [`How was the weather on my ${city} trip?`, `Did I enjoy the ${city} trip?`],
        distractors: [`Still unpacking from the ${city} trip.`, `Sent the ${city} trip photos to everyone.`]
      }
    }
  }
]

export const CONTEXT_ZH: ReadonlyArray<Template> = [
  {
    id: "zh-ctx-dentist",
    category: "context (Chinese)",
    make: (g) => ({
      turns: around(g, "那颗牙去看牙医了吗？", ["我终于去看牙医了，就是那颗一直疼的牙。", "医生怎么说？"], `他说要拔掉，约在${g.pick(ZH_DAYS)}。`),
      questions: ["牙医怎么处理我那颗牙？", "看牙医的结果是什么？"],
      distractors: ["我那颗牙又开始疼了。", "看牙医真的太贵了。"]
    })
  },
  {
    id: "zh-ctx-new-job",
    category: "context (Chinese)",
    make: (g) => ({
      turns: around(g, "新工作怎么样？还适应吗？", ["跟你说说新工作的事。", "好啊，怎么样？"], `${g.pick(ZH_DAYS)}第一天上班，同事都挺好的。`),
      questions: ["我新工作哪天开始的？", "我什么时候开始新工作的？"],
      distractors: ["新工作离家有点远。", "新工作的事情下周再说。"]
    })
  },
  {
    id: "zh-ctx-interview",
    category: "context (Chinese)",
    make: (g) => {
      const name = g.take("zhName")
      return {
        turns: around(g, `${name}面试怎么样了？`, [`${name}昨天去面试了。`, "结果怎么样？"], "当场就录用了，下个月入职。"),
        questions: [`${name}面试的结果如何？`, `${name}的面试通过了吗？`],
        distractors: [`${name}最近在准备面试，很紧张。`]
      }
    }
  },
  {
    id: "zh-ctx-car",
    category: "context (Chinese)",
    make: (g) => ({
      turns: around(g, "车修好了吗？是什么毛病？", ["车修好了，今天去取的。", "是什么毛病？"], `变速箱的问题，花了${g.num(8, 30)}00块。`),
      questions: ["我的车出了什么毛病？", "修好车花了多少钱？"],
      distractors: ["车又发出奇怪的声音了。"]
    })
  },
  {
    id: "zh-ctx-exam",
    category: "context (Chinese)",
    make: (g) => ({
      turns: around(g, "考试成绩出来了吗？", ["考试成绩出来了。", "快说说！"], `${g.num(85, 98)}分，全班${g.pick(ZH_RANKS)}。`),
      questions: ["我考试考了多少分？", "考试成绩怎么样？"],
      distractors: ["考试前一晚完全睡不着。"]
    })
  },
  {
    id: "zh-ctx-mum",
    category: "context (Chinese)",
    make: (g) => ({
      turns: around(g, "你妈妈这次住多久？", ["我妈妈昨天到了！", "太好了，这次待多久？"], `住到${g.pick(ZH_DAYS)}，然后回老家。`),
      questions: ["妈妈这次来住几天？", "妈妈什么时候回去？"],
      distractors: ["妈妈又给我寄了一箱吃的。"]
    })
  },
  {
    id: "zh-ctx-apartment",
    category: "context (Chinese)",
    make: (g) => {
      const name = g.take("zhName")
      return {
        turns: around(g, `${name}找到房子了吗？`, [`${name}这周末一直在看房子。`, "找到合适的没？"], `找到了，两室一厅，月租${g.num(25, 60)}00。`),
        questions: [`${name}租的房子怎么样？`, `${name}的新房子是什么样的？`],
        distractors: [`${name}说现在房子太难找了。`]
      }
    }
  }
]

export const MULTI_HOP: ReadonlyArray<Template> = [
  {
    id: "mh-visit-city",
    category: "multi-hop",
    make: (g) => {
      const [rel, name, city, day] = [g.take("rel"), g.take("name"), g.take("city"), weekday(g)]
      return {
        turns: [user(g.pad(`My ${rel} ${name} lives in ${city} these days.`)), assistant(g.ack())],
        later: [user(`I'm flying out to see my ${rel} on ${day}, can't wait.`), assistant(g.ack())],
        questions: [`Which city am I flying to on ${day}?`, `Where does the ${rel} I'm visiting live?`],
        distractors: [`My ${rel} never answers the phone.`, `Flying on ${day} means leaving work early.`]
      }
    }
  },
  {
    id: "mh-cake-allergy",
    category: "multi-hop",
    make: (g) => {
      const [name, allergen] = [g.take("name"), g.take("allergen")]
      return {
        turns: [user(g.pad(`${name} from work is allergic to ${allergen}.`)), assistant(g.ack())],
        later: [user(`Baking a cake for ${name}'s leaving do on ${weekday(g)}, any ideas?`), assistant("A lemon drizzle is always a hit.")],
        questions: ["What do I have to leave out of the cake I'm baking?", "Is there anything the leaving-do cake must not contain?"],
        distractors: ["Baking always makes a mess of the kitchen.", "Who else is leaving this year?"]
      }
    }
  },
  {
    id: "mh-landlord-boiler",
    category: "multi-hop",
    make: (g) => {
      const name = g.take("name")
      return {
        turns: [user(g.pad(`Our landlord is ${name}, the number is on the fridge.`)), assistant(g.ack())],
        later: [user("The boiler broke again, no hot water since this morning."), assistant("That's miserable, sorry.")],
        questions: ["Who do I call about the broken boiler?", "Who should sort out the boiler?"],
        distractors: ["Cold showers are character building, apparently.", "Is it cheaper to replace an old boiler?"]
      }
    }
  },
  {
    id: "mh-garage-brakes",
    category: "multi-hop",
    make: (g) => {
      const [name, garage] = [g.take("name"), g.take("garage")]
      return {
        turns: [user(g.pad(`${name} swears by ${garage}, says they're honest.`)), assistant(g.ack())],
        later: [user(`The brakes are squeaking, I'll book the car in where ${name} said.`), assistant(g.ack())],
        questions: ["Which garage am I taking the car to for the brakes?", "Where is the car going for the squeaky brakes?"],
        distractors: ["Squeaky brakes drive me mad.", "How long do brake pads usually last?"]
      }
    }
  },
  {
    // Adjacent but split: the when in one turn, the where in the user's next.
    id: "mh-offsite",
    category: "multi-hop",
    make: (g) => {
      const name = g.take("name")
      const place = g.pick(["the Old Library", "a boathouse by the lake", "the rooftop at the Atrium"])
      return {
        turns: [user(`The offsite with ${name}'s team is on ${weekday(g)}.`), assistant("Nice, where is it?"), user(`At ${place}, we booked the whole floor.`)],
        questions: ["Where and when is the offsite?", `When and where do we meet ${name}'s team?`],
        distractors: ["Offsites are always more tiring than normal work.", `${name}'s team is growing fast.`]
      }
    }
  },
  {
    id: "mh-dinner-diet",
    category: "multi-hop",
    make: (g) => {
      const [name, name2, day] = [g.take("name"), g.take("name"), weekday(g)]
      return {
        turns: [user(g.pad(`${name} has been vegan for ${g.num(3, 12)} years now.`)), assistant(g.ack())],
        later: [user(`${name} and ${name2} are coming for dinner on ${day}.`), assistant(g.ack())],
        questions: [`What do I need to keep in mind cooking for the ${day} dinner?`, `Can I make a beef stew for the ${day} dinner guests?`],
        distractors: ["Dinner parties stress me out.", `${name2} always brings too much wine.`]
      }
    }
  },
  {
    id: "mh-anniversary",
    category: "multi-hop",
    make: (g) => {
      const place = g.take("restaurant")
      return {
        turns: [user(`Booked ${place} for our anniversary.`), assistant("Lovely! What time?"), user(`${weekday(g)}, ${clock(g)}.`)],
        questions: ["When and where is our anniversary dinner?", "Where are we going for the anniversary, and when?"],
        distractors: ["Any anniversary gift ideas that aren't flowers?", `${place} was packed last time.`]
      }
    }
  },
  {
    id: "mh-zh-cousin",
    category: "multi-hop",
    make: (g) => {
      const [name, city] = [g.take("zhName"), g.pick(ZH_CITIES)]
      return {
        turns: [user(`我表姐${name}现在住在${city}。`), assistant("好的。")],
        later: [user("下个月去看我表姐，机票已经买好了。"), assistant("提前买挺好的。")],
        questions: ["买好机票要去哪个城市？", "我表姐住在哪个城市？"],
        distractors: ["机票越来越贵了。"]
      }
    }
  },
  {
    id: "mh-zh-budget",
    category: "multi-hop",
    make: (g) => {
      const [name, proj] = [g.take("zhName"), g.take("proj")]
      return {
        turns: [user(`${name}负责${proj}项目的预算。`), assistant("记下了。")],
        later: [user(`${proj}的预算超了，得找负责人谈谈。`), assistant("好的。")],
        questions: [`${proj}预算超支该找谁？`, `${proj}的预算问题找谁谈？`],
        distractors: ["预算的事情下周再说。"]
      }
    }
  }
]
