import { startFakeLlm } from "/work/main/test/support/fakeLlm/server.ts"
const fake = await startFakeLlm()
fake.respondWith((req) => {
  const messages = (req.body as { messages?: Array<{ role: string }> }).messages ?? []
  return { kind: "reply", parts: [{ type: "text", text: `reply #${messages.filter((m) => m.role === "user").length}` }] }
})
console.log(fake.openAiUrl)
await new Promise(() => {})
