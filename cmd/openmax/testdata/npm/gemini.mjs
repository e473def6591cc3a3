// A small foreign Gemini client for the openmax tests: Google's JavaScript
// SDK (@google/genai) holding a two-turn streamGenerateContent
// conversation with thought summaries asked for, the second turn sending
// the first reply back as the SDK keeps it (thought parts and their
// signatures included), with a fresh run id in the system instruction.
//
//   node gemini.mjs
//
// The API root comes from GEMINI_BASE_URL, the first prompt from PROMPT
// (default "hi"). It prints what it made of each streamed reply, one line
// per turn: the thought text, the answer, the number of thought
// signatures, the finish reason. When the service answers with an error it
// prints "ERROR status=... message=..." and exits 3.
import { randomUUID } from "node:crypto";
import { GoogleGenAI } from "@google/genai";

const model = "gemini-2.5-flash";
const system = `Run ${randomUUID()}.`;
const ai = new GoogleGenAI({
  apiKey: "node-gemini-test-key-0123456789",
  httpOptions: { baseUrl: process.env.GEMINI_BASE_URL, apiVersion: "v1beta" },
});

async function turn(contents) {
  const stream = await ai.models.generateContentStream({
    model,
    contents,
    config: { systemInstruction: system, thinkingConfig: { includeThoughts: true } },
  });
  let thought = "";
  let text = "";
  let signatures = 0;
  let finish = "";
  const parts = [];
  for await (const chunk of stream) {
    const cand = chunk.candidates?.[0];
    if (!cand) continue;
    finish = cand.finishReason ?? finish;
    for (const p of cand.content?.parts ?? []) {
      if (p.thought) thought += p.text ?? "";
      else text += p.text ?? "";
      if (p.thoughtSignature) signatures++;
      parts.push(p);
    }
  }
  return { thought, text, signatures, finish, parts };
}

async function main() {
  const prompts = [process.env.PROMPT || "hi", "and again"];
  const contents = [];
  for (const prompt of prompts) {
    contents.push({ role: "user", parts: [{ text: prompt }] });
    const r = await turn(contents);
    console.log(`turn: thought ${JSON.stringify(r.thought)} text ${JSON.stringify(r.text)} signatures ${r.signatures} (${r.finish})`);
    contents.push({ role: "model", parts: r.parts });
  }
}

main().catch((err) => {
  console.log(`ERROR status=${err.status} message=${err.message}`);
  process.exit(3);
});
