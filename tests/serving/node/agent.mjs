// A small Node agent for the `openprogram serve` tests.
//
// It uses the official `openai` and `@anthropic-ai/sdk` packages the way a user's program
// does: no base URL and no key in code, the clients read OPENAI_BASE_URL / OPENAI_API_KEY and
// ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY from the environment. The tests point those at
// `openprogram serve`, record a run against a loopback vendor server, then replay it with
// that server stopped and check both runs print the same lines.
//
//   node agent.mjs SCENARIO [--prompt TEXT] [--count N]
//
// SCENARIO is chat-tool, responses, anthropic, error, concurrent or all (all but error).
// Each scenario prints one JSON line on stdout: {"scenario", "ok": true, "result"} with
// everything the SDK gave back, or {"scenario", "ok": false, "error": {name, status,
// message}} (and the message on stderr). Exit 0 when every scenario was ok, 3 when one
// was not, 2 for a bad command line.
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const OPENAI_MODEL = 'gpt-4o-mini';
const ANTHROPIC_MODEL = 'claude-3-5-haiku-latest';
const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

// Every item a stream yields, in order.
async function collect(stream) {
  const items = [];
  for await (const item of stream) items.push(item);
  return items;
}

// The text and tool calls that Chat Completions chunks add up to.
function assembleChat(chunks) {
  let text = '';
  const calls = [];
  for (const chunk of chunks) {
    for (const choice of chunk.choices ?? []) {
      text += choice.delta?.content ?? '';
      for (const piece of choice.delta?.tool_calls ?? []) {
        const call = (calls[piece.index] ??= { id: '', name: '', arguments: '' });
        call.id += piece.id ?? '';
        call.name += piece.function?.name ?? '';
        call.arguments += piece.function?.arguments ?? '';
      }
    }
  }
  return { text, tool_calls: calls.filter(Boolean) };
}

// One streamed chat completion: its chunks, text and tool calls.
async function streamChat(client, messages, extra = {}) {
  const stream = await client.chat.completions.create({
    model: OPENAI_MODEL,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    ...extra,
  });
  const chunks = await collect(stream);
  return { chunks, ...assembleChat(chunks) };
}

const scenarios = {
  async 'chat-tool'({ prompt = 'What is the weather in Paris?' }) {
    const client = new OpenAI();
    const messages = [{ role: 'user', content: prompt }];
    const first = await streamChat(client, messages, { tools: [WEATHER_TOOL] });
    if (first.tool_calls.length === 0) throw new Error('the first answer called no tool');
    messages.push({
      role: 'assistant',
      content: first.text || null,
      tool_calls: first.tool_calls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      })),
    });
    for (const call of first.tool_calls) {
      messages.push({ role: 'tool', tool_call_id: call.id, content: '18°C and sunny' });
    }
    const second = await streamChat(client, messages, { tools: [WEATHER_TOOL] });
    return { first, second };
  },

  async responses({ prompt = 'Say hello' }) {
    const client = new OpenAI();
    const stream = await client.responses.create({ model: OPENAI_MODEL, input: prompt, stream: true });
    const events = await collect(stream);
    const text = events
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => event.delta)
      .join('');
    return { events, text };
  },

  async anthropic({ prompt = 'Say hello' }) {
    // The raw event stream: messages.stream() builds its final message by mutating the
    // message_start event it has already yielded, so its events would not be as received.
    const client = new Anthropic();
    const stream = await client.messages.create({
      model: ANTHROPIC_MODEL,
      max_tokens: 256,
      messages: [{ role: 'user', content: prompt }],
      stream: true,
    });
    const events = await collect(stream);
    const text = events
      .filter((event) => event.type === 'content_block_delta' && event.delta.type === 'text_delta')
      .map((event) => event.delta.text)
      .join('');
    return { events, text };
  },

  async error({ prompt = 'This one fails' }) {
    const client = new OpenAI({ maxRetries: 0 });
    try {
      await client.chat.completions.create({
        model: OPENAI_MODEL,
        messages: [{ role: 'user', content: prompt }],
      });
    } catch (err) {
      if (!(err instanceof OpenAI.APIError) || err.status == null) throw err;
      process.stderr.write(`${err.message}\n`);
      return { name: err.constructor.name, status: err.status, message: err.message };
    }
    throw new Error('the request succeeded, but an API error was expected');
  },

  async concurrent({ prompt = 'Concurrent', count = 5 }) {
    const client = new OpenAI();
    const runs = Array.from({ length: count }, (_, i) => {
      const content = `${prompt} #${i + 1}`;
      return streamChat(client, [{ role: 'user', content }]).then((run) => ({ prompt: content, ...run }));
    });
    return Promise.all(runs); // in the order of i, whatever order they end in
  },
};

function fail(message) {
  process.stderr.write(`${message}\nusage: node agent.mjs SCENARIO [--prompt TEXT] [--count N]\n`);
  process.exit(2);
}

async function main() {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: { prompt: { type: 'string' }, count: { type: 'string' } },
    });
  } catch (err) {
    fail(err.message);
  }
  const [name, ...rest] = parsed.positionals;
  if (rest.length > 0) fail(`unexpected arguments: ${rest.join(' ')}`);
  const names = name === 'all' ? ['chat-tool', 'responses', 'anthropic', 'concurrent'] : [name];
  if (!name) fail('no scenario given');
  if (!names.every((n) => Object.hasOwn(scenarios, n))) fail(`unknown scenario: ${name}`);
  const options = {};
  if (parsed.values.prompt !== undefined) options.prompt = parsed.values.prompt;
  if (parsed.values.count !== undefined) {
    options.count = Number(parsed.values.count);
    if (!Number.isInteger(options.count) || options.count < 1) fail(`bad --count: ${parsed.values.count}`);
  }

  let allOk = true;
  for (const scenario of names) {
    let line;
    try {
      line = { scenario, ok: true, result: await scenarios[scenario](options) };
    } catch (err) {
      allOk = false;
      const error = { name: err?.constructor?.name ?? 'Error', status: err?.status ?? null, message: String(err?.message ?? err) };
      line = { scenario, ok: false, error };
      process.stderr.write(`${error.message}\n`);
    }
    process.stdout.write(`${JSON.stringify(line)}\n`);
  }
  process.exitCode = allOk ? 0 : 3;
}

await main();
