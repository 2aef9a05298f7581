// Two tests whose OpenAI calls openprogram-vitest.mjs records, then replays.
import OpenAI from 'openai';
import { expect, test } from 'vitest';

// EXAMPLE_PROMPT: the serve tests change a prompt to see the replay name the drift.
const PROMPTS = { streamed: 'Say hello', whole: process.env.EXAMPLE_PROMPT ?? 'Name a colour' };

test('streams a reply', async () => {
  const client = new OpenAI(); // OPENAI_BASE_URL points at this test's session
  const stream = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: PROMPTS.streamed }],
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  expect(text).toBe(`You said: ${PROMPTS.streamed}`);
});

test('answers in one piece', async () => {
  const client = new OpenAI();
  const completion = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: PROMPTS.whole }],
  });
  expect(completion.choices[0].message.content).toBe(`You said: ${PROMPTS.whole}`);
});
