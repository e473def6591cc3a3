// A small foreign client for the openmax tests: a two-turn streamed
// conversation through a vendor SDK, with the per-run values real clients
// send (a session id in metadata.user_id or prompt_cache_key, HOME and a
// fresh UUID in the system prompt, today's date).
//
//   node client.mjs anthropic|openai
//
// The base URL comes from ANTHROPIC_BASE_URL or OPENAI_BASE_URL, the first
// prompt from PROMPT (default "hi"). It prints what it made of each
// streamed reply on stdout, one line per turn. When the API answers with an
// error it prints "ERROR status=... type=... code=... message=..." and
// exits 3.
import { randomUUID } from "node:crypto";
import os from "node:os";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

const vendor = process.argv[2];
const session = randomUUID();
const system =
  `Working directory: ${os.homedir()}/project\n` +
  `Run ${randomUUID()}, started ${new Date().toISOString()}.\n` +
  `Today's date is ${new Date().toISOString().slice(0, 10)}.`;
const prompts = [process.env.PROMPT || "hi", "and again"];

async function anthropicTurn(client, messages) {
  const stream = client.messages.stream({
    model: "claude-test",
    max_tokens: 64,
    system,
    metadata: { user_id: JSON.stringify({ device_id: randomUUID(), session_id: session }) },
    messages,
  });
  let text = "";
  stream.on("text", (t) => (text += t));
  const final = await stream.finalMessage();
  return { text, stop: final.stop_reason };
}

async function openaiTurn(client, messages) {
  const stream = await client.chat.completions.create({
    model: "gpt-test",
    stream: true,
    prompt_cache_key: session,
    messages: [{ role: "system", content: system }, ...messages],
  });
  let text = "";
  let stop = "";
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    text += choice.delta?.content ?? "";
    stop = choice.finish_reason ?? stop;
  }
  return { text, stop };
}

async function main() {
  let client, turn;
  if (vendor === "anthropic") {
    client = new Anthropic({ apiKey: "sk-ant-test" });
    turn = anthropicTurn;
  } else if (vendor === "openai") {
    client = new OpenAI({ apiKey: "sk-test" });
    turn = openaiTurn;
  } else {
    console.error("usage: node client.mjs anthropic|openai");
    process.exit(2);
  }
  const messages = [];
  for (const prompt of prompts) {
    messages.push({ role: "user", content: prompt });
    const { text, stop } = await turn(client, messages);
    console.log(`${vendor}: ${JSON.stringify(text)} (${stop})`);
    messages.push({ role: "assistant", content: text });
  }
}

main().catch((err) => {
  const body = err.error ?? {};
  // The Anthropic SDK keeps the whole body ({"type":"error","error":{...}});
  // the OpenAI SDK keeps its error member and copies type and code.
  const type = body.error?.type ?? err.type ?? "";
  const code = err.code ?? "";
  console.log(`ERROR status=${err.status} type=${type} code=${code} message=${err.message}`);
  process.exit(3);
});
