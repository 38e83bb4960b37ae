// Constrained output through the official openai Node.js client, on a random-weight
// model (its unconstrained text is noise): a json_schema response parses and validates
// (Ajv, an independent validator) in 100 of 100 seeded samples where unconstrained
// samples do not; tool_choice "required" yields a tool call whose arguments validate;
// a streamed tool call assembles to the non-streamed one. Needs STRATA_BIN and
// STRATA_SHARED (tests/http/extra.cmake).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Ajv from 'ajv';

const bin = process.env.STRATA_BIN;
const shared = process.env.STRATA_SHARED;
if (!bin || !shared) throw new Error('set STRATA_BIN and STRATA_SHARED');

const MODEL = 'random-tiny';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-structured-'));
const modelPath = path.join(dir, 'random-tiny.gguf');
let server;
let serverExit;
let client;
const ajv = new Ajv({ strict: false });

const personSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 12 },
    age: { type: 'integer' },
    pet: { enum: ['cat', 'dog', 'none'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 6 }, minItems: 1, maxItems: 3 },
    score: { anyOf: [{ type: 'number' }, { type: 'null' }] },
    home: { $ref: '#/$defs/place' },
  },
  required: ['name', 'age', 'pet', 'tags'],
  additionalProperties: false,
  $defs: {
    place: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 10 }, zip: { type: 'integer' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', minLength: 1, maxLength: 12 },
          days: { type: 'integer' },
          unit: { enum: ['c', 'f'] },
        },
        required: ['city', 'unit'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'add',
      parameters: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
        additionalProperties: false,
      },
    },
  },
];

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

function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '-m', modelPath, '--host', '127.0.0.1', '--port', '0', '-t', '1'],
                        { stdio: ['ignore', 'ignore', 'pipe'] });
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

before(async () => {
  execFileSync(bin, ['make-model', modelPath, '--preset', 'tiny', '--seed', '11', '--vocab-from',
                     path.join(shared, 'vocab', 'ggml-vocab-llama-spm.gguf')], { stdio: 'ignore' });
  server = await startServer();
  await waitHealthy(server.port);
  client = new OpenAI({ apiKey: 'unused', baseURL: `http://127.0.0.1:${server.port}/v1`, maxRetries: 0,
                        timeout: 120000 });
});

after(async () => {
  if (server) {
    server.kill('SIGTERM');
    const { code } = await serverExit;
    assert.equal(code, 0, 'strata serve exits 0 on SIGTERM');
  }
  fs.rmSync(dir, { recursive: true, force: true });
});

const messages = [{ role: 'user', content: 'Describe a person as JSON.' }];

function validCount(choices, validate) {
  let valid = 0;
  for (const c of choices) {
    try {
      if (validate(JSON.parse(c.message.content))) ++valid;
    } catch {}
  }
  return valid;
}

test('json_schema: 100 of 100 seeded samples validate; unconstrained ones do not', async () => {
  const validate = ajv.compile(personSchema);
  const response_format = { type: 'json_schema', json_schema: { name: 'person', schema: personSchema, strict: true } };
  let constrained = 0;
  let free = 0;
  let total = 0;
  // Ten requests of n = 10: choice c of seed s samples with seed s + c.
  for (let seed = 0; seed < 100; seed += 10) {
    const r = await client.chat.completions.create({ model: MODEL, messages, n: 10, seed, max_tokens: 300, response_format });
    total += r.choices.length;
    for (const c of r.choices) {
      assert.equal(c.finish_reason, 'stop', c.message.content);
      const v = JSON.parse(c.message.content);
      assert.ok(validate(v), `${c.message.content}: ${ajv.errorsText(validate.errors)}`);
      ++constrained;
    }
    const u = await client.chat.completions.create({ model: MODEL, messages, n: 10, seed, max_tokens: 100 });
    free += validCount(u.choices, validate);
  }
  console.log(`json_schema: ${constrained}/${total} constrained samples valid, ${free}/${total} unconstrained`);
  assert.equal(total, 100);
  assert.equal(constrained, 100);
  assert.ok(free < 100, 'without the constraint the model does not write valid JSON');
});

test('tool_choice required: a tool call whose arguments validate', async () => {
  const validators = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
  for (let seed = 0; seed < 10; ++seed) {
    const r = await client.chat.completions.create({
      model: MODEL, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, tool_choice: 'required',
      seed, max_tokens: 200,
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls');
    assert.equal(c.message.tool_calls.length, 1);
    const call = c.message.tool_calls[0];
    assert.equal(call.type, 'function');
    assert.ok(call.id.startsWith('call_'));
    const validate = validators[call.function.name];
    assert.ok(validate, `unknown function ${call.function.name}`);
    const args = JSON.parse(call.function.arguments);
    assert.ok(validate(args), `${call.function.arguments}: ${ajv.errorsText(validate.errors)}`);
  }
  // A named function is the one called.
  const named = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Add.' }], tools,
    tool_choice: { type: 'function', function: { name: 'add' } }, seed: 3, max_tokens: 200,
  });
  assert.equal(named.choices[0].message.tool_calls[0].function.name, 'add');
  assert.ok(validators.add(JSON.parse(named.choices[0].message.tool_calls[0].function.arguments)));
});

test('a streamed tool call assembles to the non-streamed one', async () => {
  const body = { model: MODEL, messages: [{ role: 'user', content: 'Weather?' }], tools, tool_choice: 'required',
                 seed: 42, max_tokens: 200 };
  const whole = await client.chat.completions.create(body);
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    for (const d of choice.delta.tool_calls ?? []) {
      calls[d.index] ??= { id: '', name: '', arguments: '' };
      if (d.id) calls[d.index].id = d.id;
      if (d.function?.name) calls[d.index].name += d.function.name;
      if (d.function?.arguments) calls[d.index].arguments += d.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  assert.equal(finish, 'tool_calls');
  const w = whole.choices[0].message.tool_calls;
  assert.equal(calls.length, w.length);
  assert.equal(calls[0].name, w[0].function.name);
  assert.deepEqual(JSON.parse(calls[0].arguments), JSON.parse(w[0].function.arguments));
});

test('tool results go back through the template', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, tools, seed: 1, max_tokens: 4,
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '21 C, sunny' },
    ],
  });
  assert.equal(r.choices.length, 1);
  assert.ok(r.usage.prompt_tokens > 20);
});
