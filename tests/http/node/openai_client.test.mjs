// Drives `strata serve` with the official openai Node.js client and the real tiny
// model: completions and chat, streamed and not, n, stop, logprobs, seeds, usage, and
// errors surfacing as the client's error classes. Greedy output over HTTP must equal
// `strata run`'s. Needs STRATA_BIN (the built CLI) and STRATA_SHARED (../shared);
// CTest sets both (tests/http/extra.cmake).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';

const bin = process.env.STRATA_BIN;
const shared = process.env.STRATA_SHARED;
if (!bin || !shared) throw new Error('set STRATA_BIN and STRATA_SHARED');

const KEY = 'test-key';
const MODEL = 'aidreams260K';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-openai-'));
const modelPath = path.join(dir, `${MODEL}.gguf`);
let server;
let serverExit;
let client;

function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '-m', modelPath, '--host', '127.0.0.1', '--port', '0', '-t', '1',
                              '--api-key', KEY], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log}`)), 20000);
    child.stderr.on('data', (d) => {
      log += d.toString();
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m && !child.port) {
        child.port = Number(m[1]);
        clearTimeout(timer);
        resolve(child);
      }
    });
    serverExit = new Promise((res) => child.on('exit', (code, signal) => res({ code, signal })));
    child.on('error', reject);
  });
}

async function waitHealthy(port) {
  for (let i = 0; i < 500; ++i) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/health`);
      if (r.status === 200) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('server never became healthy');
}

function strataRun(prompt, n) {
  return execFileSync(bin, ['run', '-t', '1', '-m', modelPath, '-p', prompt, '--temp', '0', '-n', String(n)], {
    encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'],
  });
}

before(async () => {
  const models = path.join(shared, 'models');
  execFileSync(bin, ['convert', 'llama2c', path.join(models, 'aidreams260K.bin'),
                     path.join(models, 'aidreams260K.tok512.bin'), modelPath], { stdio: 'ignore' });
  server = await startServer();
  await waitHealthy(server.port);
  client = new OpenAI({ apiKey: KEY, baseURL: `http://127.0.0.1:${server.port}/v1`, maxRetries: 0, timeout: 60000 });
});

after(async () => {
  if (server) {
    server.kill('SIGTERM');
    const { code } = await serverExit;
    assert.equal(code, 0, 'strata serve exits 0 on SIGTERM');
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

test('models lists the served model', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, [MODEL]);
});

test('greedy completion equals strata run, streamed and not', async () => {
  for (const prompt of ['Once upon a time', 'The dream']) {
    const expected = strataRun(prompt, 32);
    const r = await client.completions.create({ model: MODEL, prompt, max_tokens: 32, temperature: 0 });
    assert.equal(r.choices[0].text, expected);
    assert.equal(r.object, 'text_completion');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    const stream = await client.completions.create({ model: MODEL, prompt, max_tokens: 32, temperature: 0, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    assert.equal(text, expected);
  }
});

test('usage counts prompt, completion and cached tokens', async () => {
  const prompt = 'Once upon a time there was a long dream of colours and light and sound';
  const body = { model: MODEL, prompt, max_tokens: 8, ignore_eos: true };
  const a = await client.completions.create(body);
  assert.equal(a.usage.completion_tokens, 8);
  assert.equal(a.usage.total_tokens, a.usage.prompt_tokens + 8);
  const b = await client.completions.create(body);
  assert.ok(b.usage.prompt_tokens_details.cached_tokens > 0, 'the second request reuses the cached prefix');
});

test('chat completion, streamed and not', async () => {
  const messages = [{ role: 'system', content: 'You dream.' }, { role: 'user', content: 'Tell me a dream.' }];
  const r = await client.chat.completions.create({ model: MODEL, messages, max_completion_tokens: 20, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(r.usage.prompt_tokens > 0);
  const stream = await client.chat.completions.create({
    model: MODEL, messages, max_completion_tokens: 20, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, r.choices[0].message.content);
  assert.equal(finish, r.choices[0].finish_reason);
  assert.equal(usage.completion_tokens, r.usage.completion_tokens);
  assert.equal(usage.prompt_tokens, r.usage.prompt_tokens);
});

test('n=2 gives two choices; a seed reproduces them', async () => {
  const body = { model: MODEL, prompt: 'The sky', max_tokens: 16, n: 2, seed: 42, ignore_eos: true };
  const a = await client.completions.create(body);
  const b = await client.completions.create(body);
  assert.equal(a.choices.length, 2);
  assert.deepEqual(a.choices.map((c) => c.index).sort(), [0, 1]);
  assert.deepEqual(a.choices.map((c) => c.text), b.choices.map((c) => c.text));
  assert.notEqual(a.choices[0].text, a.choices[1].text);
  const chat = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Hi' }], n: 2, max_tokens: 8, seed: 7,
  });
  assert.equal(chat.choices.length, 2);
});

test('stop strings end the text', async () => {
  const full = (await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 40, temperature: 0 }))
    .choices[0].text;
  const stop = full.slice(12, 15);
  const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 40, temperature: 0, stop: [stop] });
  assert.equal(r.choices[0].text, full.slice(0, full.indexOf(stop)));
  assert.equal(r.choices[0].finish_reason, 'stop');
});

test('logprobs in the completions and chat shapes', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: 'Once', max_tokens: 5, logprobs: 2, ignore_eos: true });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, 5);
  assert.equal(lp.token_logprobs.length, 5);
  assert.equal(lp.top_logprobs.length, 5);
  for (const v of lp.token_logprobs) assert.ok(v <= 0);
  const c = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, logprobs: true, top_logprobs: 3, ignore_eos: true,
  });
  const content = c.choices[0].logprobs.content;
  assert.equal(content.length, 5);
  assert.equal(content[0].top_logprobs.length, 3);
  assert.equal(typeof content[0].token, 'string');
});

test('a wrong API key is an AuthenticationError (401)', async () => {
  const bad = new OpenAI({ apiKey: 'wrong', baseURL: client.baseURL, maxRetries: 0 });
  await assert.rejects(bad.completions.create({ model: MODEL, prompt: 'x' }), (e) => {
    assert.ok(e instanceof OpenAI.AuthenticationError);
    assert.equal(e.status, 401);
    return true;
  });
});

test('a bad parameter is a BadRequestError (400) naming the field', async () => {
  await assert.rejects(client.completions.create({ model: MODEL, prompt: 'x', temperature: -1 }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.status, 400);
    assert.equal(e.param, 'temperature');
    return true;
  });
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: [], max_tokens: 4 }),
    (e) => e instanceof OpenAI.BadRequestError,
  );
  await assert.rejects(client.completions.create({ model: 'no-such-model', prompt: 'x' }),
    (e) => e instanceof OpenAI.NotFoundError);
});
