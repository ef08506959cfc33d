/**
 * Planted facts for the retrieval evaluation (bench/retrieval.ts): templates that write a fact the
 * way people mention it in chat, and the questions a person asks about it later.
 *
 * A template returns the turns to plant (each marked evidence or not), questions meant to be fair
 * (they share at least one content word with the evidence, in another word form or with other words
 * around it), questions meant to be hard (no content word in common: a synonym or a paraphrase only),
 * and distractors: messages on the same topic that name the fact's people or things, or use the
 * question's words, without answering it (a friend's move is talked about more than once; one message
 * says where she went).
 * bench/support/retrievalData.ts checks every question against its evidence and drops the ones that
 * do not do what they were meant to (see `checkQuestion` there).
 *
 * This file: people, places and dates, preferences, events. factsMore.ts: tool output, Chinese, mixed.
 */
import type { ContentBlock, NewMessage } from "../../src/domain/message.ts"
import type { Rand } from "./chatter.ts"

export type Category =
  | "people"
  | "places/dates"
  | "preferences"
  | "events"
  | "tool output"
  | "Chinese"
  | "mixed"
  | "context"
  | "context (Chinese)"
  | "multi-hop"
/** The kinds of issue 11 (their figures stay comparable from run to run). */
export const CATEGORIES: ReadonlyArray<Category> = ["people", "places/dates", "preferences", "events", "tool output", "Chinese", "mixed"]
/** The kinds of issue 25 (factsContext.ts): answer words only in neighbouring turns, and two-turn answers. */
export const CONTEXT_CATEGORIES: ReadonlyArray<Category> = ["context", "context (Chinese)", "multi-hop"]

export interface Turn {
  readonly message: NewMessage
  readonly evidence: boolean
}

export interface Planted {
  readonly turns: ReadonlyArray<Turn>
  readonly questions: ReadonlyArray<string>
  readonly hard?: ReadonlyArray<string>
  readonly distractors?: ReadonlyArray<string>
  /** Multi-hop: a second part, told later in the same session; the questions are asked after it. */
  readonly later?: ReadonlyArray<Turn>
}

/** What a template may draw on; `take` never returns the same value twice for one user. */
export interface Gen {
  readonly rand: Rand
  readonly pick: <A>(xs: ReadonlyArray<A>) => A
  readonly num: (lo: number, hi: number) => number
  readonly take: (pool: keyof typeof FACT_POOLS) => string
  /** A fact sentence inside a user message, sometimes with small talk around it. */
  readonly pad: (sentence: string) => string
  readonly ack: () => string
  readonly toolId: () => string
}

export interface Template {
  readonly id: string
  readonly category: Category
  readonly make: (g: Gen) => Planted
}

export const user = (content: string, evidence = true): Turn => ({ message: { role: "user", content }, evidence })
export const assistant = (content: string | Array<ContentBlock>, evidence = false): Turn => ({
  message: { role: "assistant", content },
  evidence
})
export const toolResult = (id: string, content: string, evidence = true): Turn => ({
  message: { role: "tool_result", content: [{ type: "tool_result", tool_use_id: id, content }] },
  evidence
})

/** Disjoint from the filler's pools (bench/support/chatter.ts). */
export const FACT_POOLS = {
  name: [
    "Ana", "Tomas", "Priya", "Kenji", "Lena", "Marco", "Sofia", "Omar", "Hana", "Jonas", "Mei", "Ravi", "Elif", "Lucas",
    "Nadia", "Felix", "Ines", "Yusuf", "Clara", "Diego", "Ingrid", "Mateo", "Zara", "Hugo", "Leila", "Oskar", "Aiko",
    "Bruno", "Freya", "Tariq", "Caroline", "Melanie", "Greta", "Idris", "Maya", "Nico", "Rosa", "Sven", "Talia", "Viktor"
  ],
  city: [
    "Porto", "Kyoto", "Tallinn", "Valencia", "Oaxaca", "Hobart", "Ljubljana", "Bergen", "Tbilisi", "Cusco", "Hanoi",
    "Marrakesh", "Reykjavik", "Krakow", "Seville", "Montreal", "Edinburgh", "Busan", "Antwerp", "Trieste", "Bologna",
    "Graz", "Nantes", "Gdansk", "Malmo", "Cork", "Split", "Sapporo", "Cuenca", "Salzburg"
  ],
  rel: ["sister", "brother", "cousin", "aunt", "uncle", "niece", "nephew", "grandmother", "best friend", "roommate"],
  job: ["nurse", "architect", "pilot", "sous-chef", "physiotherapist", "data analyst", "carpenter", "translator", "park ranger", "vet"],
  org: ["Northwind Labs", "St. Mary's hospital", "Brightwater Studios", "a small bakery", "Greenfield Nursery", "Kestrel Airlines", "Orbital Games"],
  food: ["coriander", "olives", "blue cheese", "liquorice", "oysters", "aubergine", "anchovies", "beetroot", "okra", "raisins"],
  allergen: ["peanuts", "shellfish", "penicillin", "sesame", "kiwi", "latex"],
  animal: ["puppy", "kitten", "rabbit", "parrot", "tortoise"],
  pet: ["Biscuit", "Mochi", "Pepper", "Juniper", "Waffles", "Ziggy", "Noodle", "Clementine"],
  band: ["Khruangbin", "Big Thief", "Parcels", "Hiatus Kaiyote", "Wet Leg", "Arooj Aftab", "Fontaines"],
  venue: ["the Paradiso", "the Roundhouse", "the Tramshed", "the Olympia", "the Marquee"],
  restaurant: ["Casa Lupa", "Sora Sushi", "The Blue Heron", "Osteria Nonna", "Mesa Verde", "Little Saigon Kitchen"],
  hotel: ["Hotel Aurora", "the Harbour Inn", "Pension Edelweiss", "the Lighthouse Hostel", "Casa do Rio"],
  conf: ["RustConf", "PyData", "JSWorld", "KubeCon", "DevOpsDays", "SREcon"],
  instrument: ["cello", "ukulele", "piano", "saxophone", "drums", "violin"],
  sport: ["padel", "climbing", "volleyball", "tennis", "badminton", "squash"],
  group: ["LGBTQ support group", "grief support group", "new parents support group", "ADHD support group", "caregivers support group"],
  item: ["laptop charger", "blue scarf", "reading glasses", "kindle", "umbrella", "headphones"],
  craft: ["pottery", "woodworking", "life drawing", "bookbinding", "watercolour"],
  school: ["Hillside Primary", "Riverbank Academy", "the Montessori school on Elm Street", "Oakfield Elementary"],
  garage: ["Baker's Garage", "QuickFix Motors", "the Shell garage on the ring road"],
  proj: ["harbor", "pinecone", "ledger", "atlas", "mosaic", "quill", "tidepool", "lantern", "sprout", "beacon"],
  zhName: ["小林", "王芳", "李雷", "陈静", "张伟", "刘洋", "赵敏", "周杰", "孙丽", "吴昊"]
} as const

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
const WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
const ordinal = (d: number) => `${d}${d % 10 === 1 && d !== 11 ? "st" : d % 10 === 2 && d !== 12 ? "nd" : d % 10 === 3 && d !== 13 ? "rd" : "th"}`

export const dateOf = (g: Gen): { readonly text: string; readonly month: string } => {
  const month = g.pick(MONTHS)
  const d = g.num(2, 28)
  return { text: g.pick([`the ${ordinal(d)} of ${month}`, `${month} ${ordinal(d)}`, `${d} ${month}`]), month }
}
export const weekday = (g: Gen): string => g.pick(WEEKDAYS)
export const clock = (g: Gen): string => g.pick(["9:30", "10:15", "11:45", "2:30 pm", "4:10 pm", "half past four", "quarter to six", "7:40 am"])

const noThe = (name: string) => name.replace(/^the /i, "")
const sibling = (rel: string) => (rel === "sister" || rel === "brother" ? [`Where is my sibling based these days?`] : [])

export const PEOPLE: ReadonlyArray<Template> = [
  {
    id: "relocation",
    category: "people",
    make: (g) => {
      const [rel, name, city] = [g.take("rel"), g.take("name"), g.take("city")]
      return {
        turns: [
          user(g.pad(g.pick([
            `My ${rel} ${name} just moved to ${city}, ${name} sounds really happy there.`,
            `Big news in the family: my ${rel} ${name} is moving to ${city} at the end of the month.`,
            `${name}, my ${rel}, has relocated to ${city} for good.`
          ]))),
          assistant(g.ack())
        ],
        questions: [`Where is my ${rel} living now?`, `Which city did ${name} move to?`, `do you remember where my ${rel} was moving?`, `Who do I know in ${city}?`],
        hard: sibling(rel),
        distractors: [`My ${rel} ${name} is stressed about the move, boxes everywhere.`, `Helping ${name} pack this weekend, my back already hurts.`, `${name} sent me photos of a huge cake today.`]
      }
    }
  },
  {
    id: "job",
    category: "people",
    make: (g) => {
      const [name, job, org] = [g.take("name"), g.take("job"), g.take("org")]
      return {
        turns: [
          user(g.pad(g.pick([
            `${name} got a job as a ${job} at ${org}, we're all so proud.`,
            `Did I tell you? ${name} started working as a ${job} at ${org} this week.`
          ]))),
          assistant(g.ack())
        ],
        questions: [`What does ${name} do for work now?`, `Which of my friends became a ${job}?`, `Where is ${name} working these days?`],
        distractors: [`${name} has been job hunting for months, fingers crossed.`, `${name} had a second interview today, sounded nervous.`, `${name} and I are going for coffee soon.`]
      }
    }
  },
  {
    id: "birthday",
    category: "people",
    make: (g) => {
      const [name, date, age] = [g.take("name"), dateOf(g), g.num(21, 70)]
      return {
        turns: [
          user(g.pad(g.pick([
            `Note for later: ${name}'s birthday is ${date.text}, turning ${age}.`,
            `${name} turns ${age} on ${date.text}, I want to plan something nice.`
          ]))),
          assistant(g.ack())
        ],
        questions: [`When is ${name}'s birthday?`, `How old will ${name} be this year?`, `What date should I plan the party for ${name}?`],
        distractors: [`I need to think about what to get ${name} for the birthday.`, `Should I organise a surprise party for ${name}?`, `${name} lent me a great book last week.`]
      }
    }
  },
  {
    id: "pet",
    category: "people",
    make: (g) => {
      const [animal, pet] = [g.take("animal"), g.take("pet")]
      return {
        turns: [
          user(g.pad(g.pick([
            `We adopted a ${animal} from the shelter, we're calling it ${pet}.`,
            `Meet ${pet}, our new ${animal}! Picked up from the rescue centre on ${weekday(g)}.`
          ]))),
          assistant(g.ack())
        ],
        questions: [`What's the name of our ${animal}?`, `What did we name the new ${animal}?`, `When did we get ${pet}?`],
        hard: [`What's the name of our pet?`],
        distractors: [`Is it normal for a ${animal} to sleep this much?`, `${pet} chewed through another cable this morning.`]
      }
    }
  },
  {
    id: "school",
    category: "people",
    make: (g) => {
      const [name, school, kid] = [g.take("name"), g.take("school"), g.pick(["son", "daughter"])]
      const uniform = g.rand() < 0.5
      return {
        turns: [
          user(g.pad(uniform
            ? `My ${kid} ${name} starts at ${school} in September, the uniform is bright green.`
            : `${name} (my ${kid}) got a place at ${school}, first day is in September.`)),
          assistant(g.ack())
        ],
        questions: [`Which school is ${name} going to?`, `Where does my ${kid} start in September?`, ...(uniform ? [`What colour is ${name}'s uniform?`] : [])],
        distractors: [`${name} is nervous about the new school.`, `We still have to buy school shoes for ${name}.`, `My ${kid} keeps asking about the uniform.`]
      }
    }
  },
  {
    id: "dating",
    category: "people",
    make: (g) => {
      const [name, name2, venue] = [g.take("name"), g.take("name"), g.pick(["a climbing gym", "a friend's wedding", "a language exchange", "a book club"])]
      return {
        turns: [user(g.pad(`${name} is dating someone called ${name2} now, they met at ${venue}.`)), assistant(g.ack())],
        questions: [`Who is ${name} seeing these days?`, `Where did ${name} and ${name2} meet?`, `How did ${name} meet the new partner?`],
        distractors: [`${name} seems really happy lately, I think there's someone new.`, `${name} cancelled on me again, busy as always.`]
      }
    }
  },
  {
    id: "spare-key",
    category: "people",
    make: (g) => {
      const name = g.take("name")
      return {
        turns: [user(g.pad(`Our neighbour ${name} has a spare key to the flat, in case I get locked out.`)), assistant(g.ack())],
        questions: [`Who has the spare key to our place?`, `Which neighbour keeps a key for us?`],
        hard: [`Who can let me in if I can't get into the apartment?`],
        distractors: [`I locked myself out once last year, never again.`, `Should we get a key safe for the flat?`]
      }
    }
  }
]

export const PLACES: ReadonlyArray<Template> = [
  {
    id: "flight",
    category: "places/dates",
    make: (g) => {
      const [city, date] = [g.take("city"), dateOf(g)]
      return {
        turns: [
          user(g.pad(g.pick([
            `We fly to ${city} on ${date.text}, the flight leaves at ${clock(g)}.`,
            `Booked it! ${city}, departing ${date.text}, back ten days later.`,
            `Our trip to ${city} is set for ${date.text}.`
          ]))),
          assistant(g.ack())
        ],
        questions: [`When are we flying to ${city}?`, `What day do we leave for ${city}?`, `Where are we travelling in ${date.month}?`],
        hard: [`When is our holiday abroad?`],
        distractors: [`I bought a guidebook for ${city} today, it's huge.`, `Can you find vegetarian restaurants in ${city} for the trip?`, `What's the best way from the airport into ${city}?`]
      }
    }
  },
  {
    id: "dentist",
    category: "places/dates",
    make: (g) => ({
      turns: [
        user(g.pad(g.pick([`Dentist appointment moved to ${weekday(g)} at ${clock(g)}.`, `The dentist rescheduled me: ${weekday(g)}, ${clock(g)}.`]))),
        assistant(g.ack())
      ],
      questions: [`When is my dentist appointment?`, `What time do I see the dentist?`],
      hard: [`When do I get my teeth looked at?`],
      distractors: [`I hate going to the dentist, I get anxious for days.`, `My dentist wants me to floss more, as always.`]
    })
  },
  {
    id: "hotel",
    category: "places/dates",
    make: (g) => {
      const [hotel, city] = [g.take("hotel"), g.take("city")]
      return {
        turns: [user(g.pad(`We're staying at ${hotel} in ${city}, two nights, breakfast included.`)), assistant(g.ack())],
        questions: [`Which hotel did we book in ${city}?`, `Where are we sleeping in ${city}?`, `How many nights is the ${noThe(hotel)} booking?`],
        distractors: [`Is ${city} nice in spring? Just curious.`, `Is breakfast usually good at ${hotel}?`]
      }
    }
  },
  {
    id: "restaurant",
    category: "places/dates",
    make: (g) => {
      const [place, n] = [g.take("restaurant"), g.num(3, 9)]
      return {
        turns: [user(g.pad(`I reserved a table for ${n} at ${place} on ${weekday(g)} at ${clock(g)}.`)), assistant(g.ack())],
        questions: [`What time is the ${noThe(place)} reservation?`, `How many people is the ${noThe(place)} booking for?`],
        distractors: [`${place} has a new dessert menu apparently.`, `Is ${place} okay for vegetarians?`]
      }
    }
  },
  {
    id: "keys",
    category: "places/dates",
    make: (g) => {
      const date = dateOf(g)
      return {
        turns: [
          user(g.pad(g.pick([`We get the keys to the new flat on ${date.text}!`, `Handover of the new flat is on ${date.text}, finally.`]))),
          assistant(g.ack())
        ],
        questions: [`When can we move into the new flat?`, `What's the handover date for the flat?`],
        hard: [`When is our move-in date?`],
        distractors: [`The new flat needs a lot of painting.`, `Should we hire movers for the new flat or do it ourselves?`]
      }
    }
  },
  {
    id: "conference",
    category: "places/dates",
    make: (g) => {
      const [conf, city, date] = [g.take("conf"), g.take("city"), dateOf(g)]
      return {
        turns: [user(g.pad(`${conf} is in ${city} this year, ${date.text}, and I'm giving a talk.`)), assistant(g.ack())],
        questions: [`Where is ${conf} being held this year?`, `When is my talk at ${conf}?`, `Which conference am I speaking at in ${city}?`],
        distractors: [`The ${conf} videos from last year are online now.`, `I'm nervous about my ${conf} talk, the slides are a mess.`]
      }
    }
  },
  {
    id: "car-service",
    category: "places/dates",
    make: (g) => {
      const [garage, date] = [g.take("garage"), dateOf(g)]
      return {
        turns: [user(g.pad(`The car goes in for its service on ${date.text} at ${garage}.`)), assistant(g.ack())],
        questions: [`When is the car being serviced?`, `Which garage is servicing the car?`],
        hard: [`When does the vehicle go to the mechanic?`],
        distractors: [`The car is making a weird noise again.`, `Do I really need to get the car serviced every year?`]
      }
    }
  },
  {
    id: "thesis",
    category: "places/dates",
    make: (g) => {
      const date = dateOf(g)
      return {
        turns: [user(g.pad(`My thesis deadline got pushed to ${date.text}, what a relief.`)), assistant(g.ack())],
        questions: [`When is my thesis due now?`, `What's the new deadline for the dissertation?`],
        hard: [`When do I have to hand in my dissertation?`],
        distractors: [`My thesis supervisor wants another chapter rewritten.`, `Writing the thesis is draining me.`]
      }
    }
  }
]

export const PREFERENCES: ReadonlyArray<Template> = [
  {
    id: "dislike",
    category: "preferences",
    make: (g) => {
      const food = g.take("food")
      const v = g.num(0, 2)
      const said = [
        `Please never put ${food} in anything you suggest, I can't stand it.`,
        `I can't stand ${food}, it ruins any dish for me.`,
        `Quick food note: ${food} is a hard no for me.`
      ]
      const asked = [
        [`Which ingredient can't I stand?`, `What should you leave out of the recipes you suggest for me?`],
        [`Which ingredient can't I stand?`, `What ruins a dish for me?`],
        [`Is there any food I refuse to eat?`, `What food is off the menu for me?`]
      ]
      return {
        turns: [user(g.pad(said[v] ?? "")), assistant(g.ack())],
        questions: asked[v] ?? [],
        hard: [`What flavour do I dislike?`],
        distractors: [`Which ingredients go well with lentils?`, `Give me a recipe for dinner tonight, something quick.`]
      }
    }
  },
  {
    id: "allergy",
    category: "preferences",
    make: (g) => {
      const a = g.take("allergen")
      const doctor = g.rand() < 0.5
      return {
        turns: [
          user(g.pad(doctor
            ? `Turns out I have a ${a} allergy, the doctor confirmed it.`
            : `I'm allergic to ${a}, so please keep that in mind for recipes.`)),
          assistant(g.ack())
        ],
        // Porter stems "allergic" and "allergy" apart (allerg / allergi): so the fair and the hard
        // questions swap with the wording of the fact.
        questions: doctor ? [`do you remember my allergy?`, `What did the doctor find out about me?`] : [`What am I allergic to?`],
        hard: doctor ? [`What am I allergic to?`] : [`Which allergies do I have?`, `Is there anything that makes me sick?`],
        distractors: [`Any recipe ideas for a picnic?`]
      }
    }
  },
  {
    id: "favourite",
    category: "preferences",
    make: (g) => {
      const [thing, value] = g.pick([
        ["board game", g.pick(["Azul", "Wingspan", "Carcassonne"])],
        ["tea", g.pick(["genmaicha", "lapsang souchong", "rooibos"])],
        ["film", g.pick(["Paddington 2", "Spirited Away", "Amelie"])],
        ["author", g.pick(["Ursula K. Le Guin", "Terry Pratchett", "Toni Morrison"])]
      ] as const)
      return {
        turns: [user(g.pad(`My favourite ${thing} is ${value}, by far.`)), assistant(g.ack())],
        questions: [`What's my favorite ${thing}?`, `Which ${thing} do I like best?`],
        distractors: [`Can you recommend a new ${thing}?`, `I'm looking for a ${thing} I haven't tried yet.`]
      }
    }
  },
  {
    id: "vegetarian",
    category: "preferences",
    make: (g) => ({
      turns: [user(g.pad(`I've been vegetarian since ${g.num(2009, 2023)}, so no meat in the meal plans please.`)), assistant(g.ack())],
      questions: [`How long have I been a vegetarian?`, `Do I eat meat?`],
      hard: [`Am I on a special diet?`],
      distractors: [`Can you suggest a hearty meal for a cold evening?`, `How much protein do lentils have?`]
    })
  },
  {
    id: "coffee",
    category: "preferences",
    make: (g) => ({
      turns: [user(g.pad(`My usual order is ${g.pick(["an oat flat white", "a cortado", "a double espresso", "a chai latte"])}, no sugar.`)), assistant(g.ack())],
      questions: [`What do I usually order at the café?`, `Do I take sugar?`],
      hard: [`How do I take my coffee?`],
      distractors: [`The café near work changed owners.`, `Is oat milk better than regular milk?`]
    })
  },
  {
    id: "instrument",
    category: "preferences",
    make: (g) => {
      const instrument = g.take("instrument")
      return {
        turns: [user(g.pad(`I've started learning the ${instrument}, lessons every ${weekday(g)}.`)), assistant(g.ack())],
        questions: [`What instrument am I learning?`, `When are my ${instrument} lessons?`],
        hard: [`What am I studying in music?`],
        distractors: [`Practising the ${instrument} is harder than I thought.`, `My ${instrument} teacher is very strict.`]
      }
    }
  },
  {
    id: "window-seat",
    category: "preferences",
    make: (g) => ({
      turns: [user(g.pad(`On long flights I always want a window seat, never the aisle.`)), assistant(g.ack())],
      questions: [`Do I prefer the aisle or the window?`, `What kind of seat should you pick for my flights?`],
      hard: [`Where do I like to sit on planes?`],
      distractors: [`Long flights make my back hurt.`, `Is it worth paying extra for seat selection?`]
    })
  },
  {
    id: "sport",
    category: "preferences",
    make: (g) => {
      const sport = g.take("sport")
      const day = weekday(g)
      return {
        turns: [user(g.pad(`${sport[0]?.toUpperCase()}${sport.slice(1)} on ${day}s is the highlight of my week.`)), assistant(g.ack())],
        questions: [`What day is my ${sport} session?`, `What do I do on ${day}s?`],
        hard: [`Which sport am I into at the moment?`],
        distractors: [`I'm sore from ${sport}, every muscle hurts.`, `Should I take ${sport} lessons to improve?`]
      }
    }
  }
]

export const EVENTS: ReadonlyArray<Template> = [
  {
    id: "support-group",
    category: "events",
    make: (g) => {
      const [name, group] = [g.take("name"), g.take("group")]
      const self = g.rand() < 0.3
      return self
        ? {
          turns: [user(g.pad(`I went to a ${group} meeting yesterday, it was more moving than I expected.`)), assistant(g.ack())],
          questions: [`When did I go to the support group?`, `What kind of group meeting did I attend?`],
          distractors: [`Do support groups actually help? Asking for a friend.`]
        }
        : {
          turns: [user(g.pad(`${name} went to a ${group} yesterday and said it really helped.`)), assistant(g.ack())],
          questions: [`When did ${name} go to the support group?`, `What kind of support group did ${name} attend?`, `Has ${name} found any support lately?`],
          distractors: [`${name} has had a rough few months, I worry.`, `Do support groups actually help? Asking for a friend.`]
        }
    }
  },
  {
    id: "half-marathon",
    category: "events",
    make: (g) => {
      const [name, city] = [g.take("name"), g.take("city")]
      return {
        turns: [user(g.pad(`${name} ran the ${city} half marathon in 1:${g.num(35, 59)}:${g.num(10, 59)}!`)), assistant(g.ack())],
        questions: [`What was ${name}'s time in the half marathon?`, `How fast did ${name} run in ${city}?`],
        distractors: [`${name} is training for something again, no idea what.`, `How do you train for a half marathon in three months?`]
      }
    }
  },
  {
    id: "concert",
    category: "events",
    make: (g) => {
      const [band, venue] = [g.take("band"), g.take("venue")]
      return {
        turns: [user(g.pad(`We saw ${band} live at ${venue} last night, best gig this year.`)), assistant(g.ack())],
        questions: [`Which band did we see at ${venue}?`, `When did we go see ${band}?`, `Where was the ${band} concert?`],
        distractors: [`${band} have a new album out, it's a bit slow.`, `Concert tickets are so expensive now.`]
      }
    }
  },
  {
    id: "injury",
    category: "events",
    make: (g) => {
      const [part, sport] = [g.pick(["ankle", "wrist", "knee", "shoulder"]), g.take("sport")]
      return {
        turns: [user(g.pad(`I sprained my ${part} ${sport === "climbing" ? "climbing" : `playing ${sport}`} on ${weekday(g)}.`)), assistant(g.ack())],
        questions: [`How did I hurt my ${part}?`, `What happened to my ${part}?`],
        hard: [`Why was I injured last week?`],
        distractors: [`My ${part} still hurts, should I see someone?`, `Is ice or heat better for a swollen ${part}?`]
      }
    }
  },
  {
    id: "driving-test",
    category: "events",
    make: (g) => ({
      turns: [user(g.pad(`I passed my driving test on the ${g.pick(["second", "third"])} attempt!!`)), assistant(g.ack())],
      questions: [`How many tries did my driving exam take?`, `Did I pass the test in the end?`],
      hard: [`Did I ever get my licence?`],
      distractors: [`Driving lessons are so expensive.`, `I'm nervous about the driving test, my parking is terrible.`]
    })
  },
  {
    id: "wedding",
    category: "events",
    make: (g) => {
      const [name, name2, city] = [g.take("name"), g.take("name"), g.take("city")]
      return {
        turns: [user(g.pad(`${name} and ${name2} got married in ${city} last weekend, beautiful ceremony.`)), assistant(g.ack())],
        questions: [`Where did ${name} get married?`, `Whose wedding was in ${city}?`, `Who did ${name} marry?`],
        distractors: [`${name2} recommended a podcast about architecture.`, `What do you wear to a wedding in summer?`, `${name} is so stressed about the wedding planning.`]
      }
    }
  },
  {
    id: "lost-item",
    category: "events",
    make: (g) => {
      const [item, city] = [g.take("item"), g.take("city")]
      return {
        turns: [user(g.pad(`I left my ${item} on the train to ${city}, so annoying.`)), assistant(g.ack())],
        questions: [`Where did I lose my ${item}?`, `What did I forget on the train?`],
        distractors: [`Do train companies have a lost property office?`, `I need a new ${item}, any recommendations?`]
      }
    }
  },
  {
    id: "class",
    category: "events",
    make: (g) => {
      const craft = g.take("craft")
      const place = g.pick(["the community centre", "the art school", "a studio near the park"])
      return {
        turns: [user(g.pad(`Signed up for a ${craft} class at ${place}, ${weekday(g)} evenings.`)), assistant(g.ack())],
        questions: [`What day is my ${craft} class?`, `Where do I take ${craft} lessons?`],
        hard: [`Which hobby course did I join?`],
        distractors: [`I'd like to try ${craft} one day.`, `My ${craft} teacher said my work was promising.`]
      }
    }
  }
]
