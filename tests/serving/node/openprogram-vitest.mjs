// Record and replay each Vitest test's LLM calls through `openprogram serve`.
// Use this one file as both `globalSetup` and `setupFiles` in vitest.config.
//   globalSetup: starts one server for the run (unless OPENPROGRAM_SERVE_URL names one, with its
//     OPENPROGRAM_SERVE_TOKEN), stops it at the end and fails the run if it reports a mismatch
//     or recorded calls never requested.
//   setupFiles: each test gets its own session, so its own recording,
//     <OPENPROGRAM_SERVE_DIR>/<test file>/<test name>.jsonl, in OPENPROGRAM_SERVE_MODE (once,
//     replay or record; default once); clients built inside the test (`new OpenAI()`) read the
//     base URLs it sets in process.env, and send the server's token with what they send to it.
//     Not for `test.concurrent`: a file's tests share process.env.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';

let server; // the server that globalSetup started

export async function setup(project) {
  let url = process.env.OPENPROGRAM_SERVE_URL; // `openprogram exec -- npx vitest run` sets it,
  let token = process.env.OPENPROGRAM_SERVE_TOKEN; // and the server's token
  if (url && !token) throw new Error('OPENPROGRAM_SERVE_URL names a server: set '
    + 'OPENPROGRAM_SERVE_TOKEN to the token it printed (exec sets both)');
  if (!url) {
    const serve = process.env.OPENPROGRAM_SERVE_COMMAND || 'openprogram serve'; // + options
    const [command, ...args] = serve.trim().split(/\s+/);
    const dir = path.resolve(process.env.OPENPROGRAM_SERVE_DIR || 'tests/recordings');
    const child = spawn(command, [...args, '--port', '0', '--dir', dir, '--quiet'],
      { stdio: ['ignore', 'pipe', 'inherit'] });
    ({ url, token } = await new Promise((resolve, reject) => {
      const printed = {}; // once it listens: OPENPROGRAM_SERVE_URL=…, then OPENPROGRAM_SERVE_TOKEN=…
      child.on('error', reject);
      child.on('exit', (code) => reject(new Error(`openprogram serve exited ${code}`)));
      createInterface({ input: child.stdout }).on('line', (line) => {
        const found = line.match(/^\s*OPENPROGRAM_SERVE_(URL|TOKEN)=(\S+)$/);
        if (found) printed[found[1].toLowerCase()] = found[2];
        if (printed.url && printed.token) resolve(printed);
      });
    }));
    server = child;
  }
  project.provide('openprogramServeUrl', url);
  project.provide('openprogramServeToken', token);
}

export async function teardown() {
  if (!server) return;
  server.kill('SIGTERM'); // it finishes its recordings, then exits 1 if any had a problem
  if (server.exitCode === null && server.signalCode === null) await once(server, 'exit');
  const code = server.exitCode ?? server.signalCode;
  if (code !== 0) throw new Error(`openprogram serve exited ${code}: see its report above`);
}

if (process.env.VITEST_WORKER_ID) { // in a test worker, not in globalSetup
  const { afterEach, beforeEach, expect, inject } = await import('vitest');
  const url = inject('openprogramServeUrl');
  // What this worker sends to the server, and only to it, carries the server's token: the
  // control requests below, and those of the clients a test builds (`new OpenAI()` sends
  // through the global fetch), which name the test's session by their base URL.
  const sendWithoutToken = globalThis.fetch;
  const toServer = (target) => URL.canParse(target) && new URL(target).origin === new URL(url).origin;
  globalThis.fetch = (input, init = {}) => {
    if (!toServer(input?.url ?? String(input))) return sendWithoutToken(input, init);
    const headers = new Headers(init.headers ?? input?.headers);
    headers.set('x-openprogram-token', inject('openprogramServeToken'));
    return sendWithoutToken(input, { ...init, headers });
  };
  const control = async (method, where, body) => {
    const response = await fetch(`${url}/__openprogram/${where}`,
      { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    const answer = await response.json();
    if (!response.ok) throw new Error(`openprogram serve: ${answer.error.message}`);
    return answer;
  };
  // A recording name's parts: letters, digits, '.', '_', '-'; 128 characters at most.
  const part = (text) => text.replace(/[^\w.-]+/g, '-').replace(/^[.-]+/, '').slice(0, 128) || '_';
  const KEYS = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GEMINI_API_KEY'];
  let session;
  let placed = []; // the keys set for a replay (the SDKs want one; nothing is sent)

  beforeEach(async () => {
    const { testPath, currentTestName } = expect.getState();
    const file = path.relative(process.cwd(), testPath).split(path.sep).map(part).join('/');
    const mode = process.env.OPENPROGRAM_SERVE_MODE || 'once';
    session = await control('POST', 'sessions', { name: `${file}/${part(currentTestName)}`, mode });
    process.env.OPENAI_BASE_URL = session.base_urls.openai;
    process.env.ANTHROPIC_BASE_URL = session.base_urls.anthropic;
    process.env.GOOGLE_GEMINI_BASE_URL = session.base_urls.gemini;
    placed = session.mode === 'replay' ? KEYS.filter((name) => !process.env[name]) : [];
    for (const name of placed) process.env[name] = 'openprogram-replay-placeholder-key';
  });

  afterEach(async ({ task }) => {
    for (const name of placed) delete process.env[name];
    if (!session) return;
    const failed = task.result?.state === 'fail'; // then what it recorded is thrown away
    const account = await control('DELETE', `sessions/${session.id}?keep=${!failed}`);
    session = undefined;
    if (!account.ok && !failed) throw new Error(account.report); // mismatches, calls left
  });
}
