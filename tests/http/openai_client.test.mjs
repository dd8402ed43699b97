// The official `openai` npm client against a running `ringserve serve --http`.
// Run by run_openai_client_test.sh, which starts the server and sets
// RINGSERVE_HTTP_URL (e.g. http://127.0.0.1:18080/v1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const baseURL = process.env.RINGSERVE_HTTP_URL;
const client = new OpenAI({ baseURL, apiKey: 'not-needed', maxRetries: 0, timeout: 120_000 });
const root = baseURL.replace(/\/v1$/, '');

async function modelId() {
  const models = await client.models.list();
  return models.data[0].id;
}

test('models lists the served model', async () => {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  assert.equal(models.data[0].object, 'model');
  assert.ok(models.data[0].id.length > 0);
});

test('chat completion, non-streaming and streaming, agree (greedy)', async () => {
  const model = await modelId();
  const request = {
    model,
    messages: [{ role: 'user', content: 'Name three colours.' }],
    max_tokens: 12,
    temperature: 0,
  };
  const full = await client.chat.completions.create(request);
  assert.equal(full.object, 'chat.completion');
  const choice = full.choices[0];
  assert.equal(choice.message.role, 'assistant');
  assert.ok(['stop', 'length'].includes(choice.finish_reason));
  assert.ok(full.usage.prompt_tokens > 0);
  assert.ok(full.usage.completion_tokens > 0 && full.usage.completion_tokens <= 12);
  const fullText = (choice.message.reasoning_content ?? '') + '\u0000' + choice.message.content;

  const stream = await client.chat.completions.create({
    ...request,
    stream: true,
    stream_options: { include_usage: true },
  });
  let reasoning = '';
  let content = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      reasoning += c.delta.reasoning_content ?? '';
      content += c.delta.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(reasoning + '\u0000' + content, fullText);
  assert.equal(finish, choice.finish_reason);
  assert.deepEqual(usage, full.usage);
});

test('completion with logprobs, streaming equals non-streaming', async () => {
  const model = await modelId();
  const request = { model, prompt: 'The quick brown fox', max_tokens: 6, temperature: 0, logprobs: 2 };
  const full = await client.completions.create(request);
  assert.equal(full.object, 'text_completion');
  assert.equal(full.choices[0].logprobs.tokens.length, full.usage.completion_tokens);
  assert.equal(full.choices[0].logprobs.top_logprobs[0] !== null, true);
  const stream = await client.completions.create({ ...request, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, full.choices[0].text);
});

test('a cancelled stream frees its sequence', async () => {
  const model = await modelId();
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Count slowly to one thousand.' }],
    max_tokens: 400,
    temperature: 0,
    stream: true,
  });
  let chunks = 0;
  for await (const _ of stream) {
    if (++chunks === 3) {
      stream.controller.abort();
      break;
    }
  }
  // The server notices the closed connection and cancels within a step.
  let running = null;
  for (let i = 0; i < 100; i++) {
    const metrics = await (await fetch(`${root}/metrics`)).text();
    const m = metrics.match(/^ringserve_requests_running (\S+)$/m);
    running = m ? Number(m[1]) : null;
    if (running === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(running, 0);
});

test('errors come back as OpenAI errors with status codes', async () => {
  const model = await modelId();
  await assert.rejects(
    client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 10_000_000,
    }),
    (err) => err.status === 400 && err.code === 'context_length_exceeded',
  );
  await assert.rejects(
    client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], temperature: 'hot' }),
    (err) => err.status === 400,
  );
});
