// The official `openai` npm client, and plain HTTP requests (fetch: what curl
// would send), against a running `ringserve serve --http`. Run by
// run_openai_client_test.sh, which starts the server with --max-batch 1
// --max-queue 1 --max-prompt-tokens 1024 --http-max-body-bytes 65536 and
// sets RINGSERVE_HTTP_URL (e.g. http://127.0.0.1:18080/v1).
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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- Prometheus text exposition format (version 0.0.4) ---------------------

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"';
const VALUE = '[+-]?(?:Inf|NaN|(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][+-]?\\d+)?)';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*)?,?\\})? (${VALUE})(?: -?\\d+)?$`);

function parseValue(text) {
  if (/^\+?Inf$/.test(text)) return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

// Returns {families: Map(name -> {type, help, samples: [{name, labels, value}]})};
// throws on any line that is not valid exposition text.
function parseExposition(text) {
  assert.ok(text.endsWith('\n'), 'exposition ends with a newline');
  const families = new Map();
  const family = (name) => {
    if (!families.has(name)) families.set(name, { type: 'untyped', help: null, samples: [] });
    return families.get(name);
  };
  for (const line of text.split('\n').slice(0, -1)) {
    let m;
    if ((m = line.match(new RegExp(`^# HELP (${NAME}) (.*)$`)))) {
      assert.equal(family(m[1]).help, null, `second HELP for ${m[1]}`);
      family(m[1]).help = m[2];
    } else if ((m = line.match(new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`)))) {
      const f = family(m[1]);
      assert.equal(f.samples.length, 0, `TYPE after samples for ${m[1]}`);
      f.type = m[2];
    } else if (line.startsWith('#')) {
      // a comment
    } else {
      m = line.match(SAMPLE);
      assert.ok(m, `not a sample line: ${JSON.stringify(line)}`);
      const labels = {};
      for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
        labels[l[1]] = l[2];
      }
      let name = m[1];
      const base = name.replace(/_(bucket|sum|count)$/, '');
      if (!families.has(name) && families.get(base)?.type === 'histogram') name = base;
      assert.ok(families.has(name), `sample ${m[1]} before its TYPE`);
      families.get(name).samples.push({ name: m[1], labels, value: parseValue(m[3]) });
    }
  }
  for (const [name, f] of families) {
    if (f.type === 'counter') {
      for (const s of f.samples) assert.ok(s.value >= 0, `counter ${name} is negative`);
    }
    if (f.type !== 'histogram') continue;
    const buckets = f.samples.filter((s) => s.name === `${name}_bucket`);
    const count = f.samples.find((s) => s.name === `${name}_count`);
    assert.ok(f.samples.find((s) => s.name === `${name}_sum`), `${name}_sum`);
    assert.ok(count, `${name}_count`);
    assert.ok(buckets.length > 0 && buckets.at(-1).labels.le === '+Inf', `${name} ends with le="+Inf"`);
    for (let i = 1; i < buckets.length; i++) {
      assert.ok(parseValue(buckets[i].labels.le) > parseValue(buckets[i - 1].labels.le), `${name} le ascending`);
      assert.ok(buckets[i].value >= buckets[i - 1].value, `${name} buckets are cumulative`);
    }
    assert.equal(buckets.at(-1).value, count.value, `${name} +Inf bucket equals _count`);
  }
  return families;
}

async function metrics() {
  const res = await fetch(`${root}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

// The value of the first sample called `name` with these labels.
function value(families, name, labels = {}) {
  const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/, ''));
  return family?.samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )?.value;
}

// Plain HTTP: status, headers and the parsed OpenAI error.
async function post(path, body, headers = {}) {
  const res = await fetch(`${root}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, text, json };
}

function assertApiError(reply, status, code) {
  assert.equal(reply.status, status, reply.text);
  assert.equal(reply.headers.get('content-type'), 'application/json');
  assert.equal(typeof reply.json?.error?.message, 'string', reply.text);
  assert.equal(typeof reply.json.error.type, 'string');
  if (code) assert.equal(reply.json.error.code, code, reply.text);
}

// --- the openai client -----------------------------------------------------

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
    max_tokens: 1000,
    temperature: 0,
    ignore_eos: true,
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
    running = value(await metrics(), 'ringserve_requests_running');
    if (running === 0) break;
    await sleep(50);
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

// --- plain HTTP ------------------------------------------------------------

test('health answers 200 when ready, GET only', async () => {
  const res = await fetch(`${root}/health`);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { status: 'ok' });
  const post = await fetch(`${root}/health`, { method: 'POST' });
  assert.equal(post.status, 405);
});

test('metrics parse as Prometheus text and count what was served', async () => {
  const families = await metrics();
  for (const [name, type] of [
    ['ringserve_ready', 'gauge'],
    ['ringserve_requests_total', 'counter'],
    ['ringserve_prompt_tokens_total', 'counter'],
    ['ringserve_generation_tokens_total', 'counter'],
    ['ringserve_requests_running', 'gauge'],
    ['ringserve_queue_depth', 'gauge'],
    ['ringserve_kv_cache_usage_ratio', 'gauge'],
    ['ringserve_model_load_seconds', 'gauge'],
    ['ringserve_preflight_verdict', 'gauge'],
    ['ringserve_batch_size', 'histogram'],
    ['ringserve_time_to_first_token_seconds', 'histogram'],
    ['ringserve_inter_token_latency_seconds', 'histogram'],
  ]) {
    assert.equal(families.get(name)?.type, type, name);
    assert.ok(families.get(name).help, `${name} has HELP`);
  }
  assert.equal(value(families, 'ringserve_ready'), 1);
  assert.ok(value(families, 'ringserve_requests_total') >= 5);
  assert.ok(value(families, 'ringserve_generation_tokens_total') > 0);
  assert.ok(value(families, 'ringserve_model_load_seconds') > 0);
  assert.equal(value(families, 'ringserve_preflight_verdict', { verdict: 'skipped' }), 1);
  assert.ok(value(families, 'ringserve_time_to_first_token_seconds_count') >= 5);
  assert.ok(value(families, 'ringserve_http_errors_total') >= 2);
});

test('malformed JSON and wrong field types are 400 invalid_request', async () => {
  const chat = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 };
  assertApiError(await post('/v1/chat/completions', '{"messages": [', {}), 400, 'invalid_request');
  assertApiError(await post('/v1/completions', '[1, 2, 3]'), 400, 'invalid_request');
  for (const [path, body] of [
    ['/v1/chat/completions', { ...chat, temperature: 'hot' }],
    ['/v1/chat/completions', { ...chat, max_tokens: '5' }],
    ['/v1/chat/completions', { ...chat, stream: 'yes' }],
    ['/v1/chat/completions', { ...chat, stop: 7 }],
    ['/v1/chat/completions', { ...chat, messages: 'hi' }],
    ['/v1/chat/completions', { ...chat, messages: [{ role: 'user', content: 5 }] }],
    ['/v1/chat/completions', { ...chat, model: 5 }],
    ['/v1/completions', { prompt: { text: 'x' }, max_tokens: 2 }],
    ['/v1/completions', { prompt: 'x', top_k: 1.5 }],
  ]) {
    assertApiError(await post(path, body), 400, 'invalid_request');
  }
});

test('an oversized body is 413', async () => {
  const reply = await post('/v1/completions', { prompt: 'x'.repeat(70_000), max_tokens: 1 });
  assertApiError(reply, 413, 'request_too_large');
});

test('too many tokens is 400 context_length_exceeded', async () => {
  // max_tokens beyond the context (2048), and a prompt beyond --max-prompt-tokens (1024).
  assertApiError(
    await post('/v1/completions', { prompt: 'Hello', max_tokens: 4096 }),
    400,
    'context_length_exceeded',
  );
  const ids = Array.from({ length: 1500 }, (_, i) => 1000 + i);
  assertApiError(await post('/v1/completions', { prompt: ids, max_tokens: 1 }), 400, 'context_length_exceeded');
});

test('unknown routes are 404, wrong methods 405', async () => {
  assertApiError(await post('/v1/embeddings', { input: 'x' }), 404, 'not_found');
  const res = await fetch(`${root}/v1/chat/completions`);
  assert.equal(res.status, 405);
});

test('overload is 429 with Retry-After', async () => {
  // --max-batch 1 --max-queue 1: A runs, B waits, C is refused.
  const body = { prompt: 'Once upon a time', max_tokens: 1000, ignore_eos: true, temperature: 0, stream: true };
  const a = new AbortController();
  const b = new AbortController();
  try {
    const first = await fetch(`${root}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      signal: a.signal,
    });
    assert.equal(first.status, 200);
    const reader = first.body.getReader();
    await reader.read(); // A has produced a token: it is running
    const second = fetch(`${root}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      signal: b.signal,
    }).catch(() => null);
    let queued = 0;
    for (let i = 0; i < 200 && queued < 1; i++) {
      queued = value(await metrics(), 'ringserve_queue_depth');
      if (queued < 1) await sleep(10);
    }
    assert.equal(queued, 1, 'B waits in the queue');
    const third = await post('/v1/completions', { prompt: 'x', max_tokens: 1 });
    assertApiError(third, 429, 'rate_limit_exceeded');
    assert.equal(third.headers.get('retry-after'), '1');
    void second;
  } finally {
    a.abort();
    b.abort();
  }
  for (let i = 0; i < 100; i++) {
    const m = await metrics();
    if (value(m, 'ringserve_requests_running') === 0 && value(m, 'ringserve_queue_depth') === 0) return;
    await sleep(50);
  }
  assert.fail('the aborted requests were not freed');
});
