// Record and replay each Jest test's LLM calls through `openprogram serve`.
// Use this one file as `globalSetup`, `globalTeardown` and in `setupFilesAfterEnv` (jest.config;
// the root config, not each of `projects`).
//   globalSetup: starts one server for the run (unless OPENPROGRAM_SERVE_URL names one, with its
//     OPENPROGRAM_SERVE_TOKEN) and passes its URL and token to the workers in process.env;
//     globalTeardown stops it, and fails the run if it reports a mismatch or recorded calls
//     never requested.
//   setupFilesAfterEnv: each test gets its own session, so its own recording,
//     <OPENPROGRAM_SERVE_DIR>/<test file>/<test name>.jsonl, in OPENPROGRAM_SERVE_MODE (once,
//     replay or record; default once); clients built inside the test (`new OpenAI()`) read the
//     base URLs it sets in process.env, and send the server's token with what they send to it.
//     Not for `test.concurrent`: a file's tests share process.env.
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const path = require('node:path');
const { createInterface } = require('node:readline');

async function start() {
  if (process.env.OPENPROGRAM_SERVE_URL) { // `openprogram exec -- npx jest` sets it, and the token
    if (process.env.OPENPROGRAM_SERVE_TOKEN) return null;
    throw new Error('OPENPROGRAM_SERVE_URL names a server: set '
      + 'OPENPROGRAM_SERVE_TOKEN to the token it printed (exec sets both)');
  }
  const serve = process.env.OPENPROGRAM_SERVE_COMMAND || 'openprogram serve'; // + options
  const [command, ...args] = serve.trim().split(/\s+/);
  const dir = path.resolve(process.env.OPENPROGRAM_SERVE_DIR || 'tests/recordings');
  const child = spawn(command, [...args, '--port', '0', '--dir', dir, '--quiet'],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const { url, token } = await new Promise((resolve, reject) => {
    const printed = {}; // once it listens: OPENPROGRAM_SERVE_URL=…, then OPENPROGRAM_SERVE_TOKEN=…
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`openprogram serve exited ${code}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const found = line.match(/^\s*OPENPROGRAM_SERVE_(URL|TOKEN)=(\S+)$/);
      if (found) printed[found[1].toLowerCase()] = found[2];
      if (printed.url && printed.token) resolve(printed);
    });
  });
  process.env.OPENPROGRAM_SERVE_URL = url;
  process.env.OPENPROGRAM_SERVE_TOKEN = token;
  return child;
}

async function stop(server) {
  if (!server) return;
  delete process.env.OPENPROGRAM_SERVE_URL;
  delete process.env.OPENPROGRAM_SERVE_TOKEN;
  server.kill('SIGTERM'); // it finishes its recordings, then exits 1 if any had a problem
  if (server.exitCode === null && server.signalCode === null) await once(server, 'exit');
  const code = server.exitCode ?? server.signalCode;
  if (code !== 0) throw new Error(`openprogram serve exited ${code}: see its report above`);
}

// Jest calls this as globalSetup, then as globalTeardown (and in each test file, where it
// has nothing to do: the hooks below are registered when the file is loaded).
module.exports = async () => {
  if (typeof beforeEach === 'function') return;
  if (!('openprogramServer' in globalThis)) globalThis.openprogramServer = await start();
  else await stop(globalThis.openprogramServer).finally(() => delete globalThis.openprogramServer);
};

if (typeof beforeEach === 'function') { // in a test file, not in globalSetup
  const url = process.env.OPENPROGRAM_SERVE_URL;
  // What this test file sends to the server, and only to it, carries the server's token: the
  // control requests below, and those of the clients a test builds (`new OpenAI()` sends
  // through the global fetch), which name the test's session by their base URL.
  const sendWithoutToken = globalThis.fetch;
  const toServer = (target) => URL.canParse(target) && new URL(target).origin === new URL(url).origin;
  globalThis.fetch = (input, init = {}) => {
    if (!toServer(input?.url ?? String(input))) return sendWithoutToken(input, init);
    const headers = new Headers(init.headers ?? input?.headers);
    headers.set('x-openprogram-token', process.env.OPENPROGRAM_SERVE_TOKEN);
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

  afterEach(async () => { // Jest does not say whether the test failed: its recording is kept
    for (const name of placed) delete process.env[name];
    if (!session) return;
    const account = await control('DELETE', `sessions/${session.id}`);
    session = undefined;
    if (!account.ok) throw new Error(account.report); // mismatches, calls never requested
  });
}
