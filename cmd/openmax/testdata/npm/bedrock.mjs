// A small foreign Bedrock client for the openmax tests: AWS's JavaScript
// SDK (@aws-sdk/client-bedrock-runtime) holding a two-turn ConverseStream
// conversation, then one InvokeModelWithResponseStream turn carrying an
// Anthropic Messages body, each signed with SigV4 from static test
// credentials and a fresh run id in the system prompt.
//
//   node bedrock.mjs
//
// The endpoint comes from BEDROCK_BASE_URL, the first prompt from PROMPT
// (default "hi"). It prints what it made of each streamed reply, one line
// per turn. When the service answers with an error it prints
// "ERROR status=... type=... message=..." and exits 3.
import { randomUUID } from "node:crypto";
import {
  BedrockRuntimeClient,
  ConverseStreamCommand,
  InvokeModelWithResponseStreamCommand,
} from "@aws-sdk/client-bedrock-runtime";
// The client's own default is HTTP/2, which over plain http:// means h2c
// with prior knowledge; the fake provider and the recording proxy speak
// HTTP/1.1 (as Bedrock does too), so the HTTP/1.1 handler of the same
// package family is given.
import { NodeHttpHandler } from "@smithy/node-http-handler";

const model = "us.anthropic.claude-haiku-4-5-20251001-v1:0";
const system = `Run ${randomUUID()}.`;
const client = new BedrockRuntimeClient({
  region: "us-east-1",
  endpoint: process.env.BEDROCK_BASE_URL,
  credentials: { accessKeyId: "AKIDNODETEST0001", secretAccessKey: "node-test-secret-0123456789" },
  maxAttempts: 1,
  requestHandler: new NodeHttpHandler(),
});

async function converseTurn(messages) {
  const out = await client.send(
    new ConverseStreamCommand({ modelId: model, system: [{ text: system }], messages }),
  );
  let text = "";
  let stop = "";
  for await (const ev of out.stream) {
    text += ev.contentBlockDelta?.delta?.text ?? "";
    stop = ev.messageStop?.stopReason ?? stop;
  }
  return { text, stop };
}

async function invokeTurn(prompt) {
  const body = JSON.stringify({
    anthropic_version: "bedrock-2023-05-31",
    max_tokens: 64,
    system,
    messages: [{ role: "user", content: prompt }],
  });
  const out = await client.send(
    new InvokeModelWithResponseStreamCommand({ modelId: model, contentType: "application/json", body }),
  );
  let text = "";
  let stop = "";
  for await (const ev of out.body) {
    if (!ev.chunk) continue;
    const e = JSON.parse(new TextDecoder().decode(ev.chunk.bytes));
    if (e.type === "content_block_delta" && e.delta.type === "text_delta") text += e.delta.text;
    if (e.type === "message_delta") stop = e.delta.stop_reason ?? stop;
  }
  return { text, stop };
}

async function main() {
  const prompts = [process.env.PROMPT || "hi", "and again"];
  const messages = [];
  for (const prompt of prompts) {
    messages.push({ role: "user", content: [{ text: prompt }] });
    const { text, stop } = await converseTurn(messages);
    console.log(`converse: ${JSON.stringify(text)} (${stop})`);
    messages.push({ role: "assistant", content: [{ text }] });
  }
  const { text, stop } = await invokeTurn(prompts[0]);
  console.log(`invoke: ${JSON.stringify(text)} (${stop})`);
}

main().catch((err) => {
  console.log(`ERROR status=${err.$metadata?.httpStatusCode} type=${err.name} message=${err.message}`);
  process.exit(3);
});
