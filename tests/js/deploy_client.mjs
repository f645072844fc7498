#!/usr/bin/env node
// Drive an MCP server with the OFFICIAL TypeScript SDK client
// (@modelcontextprotocol/client 2.4.0, pinned in package.json).
//
// Why: our server must interoperate with real third-party clients. This script
// connects with the SDK's Client, answers the deploy confirmation from an
// `elicitation/create` handler (the same handler serves the 2026-07-28 MRTR
// auto-retry loop and the 2025-11-25 live server->client request) and calls
// `deploy` once. Same CLI and same one-line JSON output as tests/sdk/py_client.py.
//
//   cd tests/js && npm ci
//   node tests/js/deploy_client.mjs --mode auto --answer accept --url http://127.0.0.1:5000/mcp --token secret
//   node tests/js/deploy_client.mjs --mode legacy --answer decline --stdio -- python bench/sdk_server.py --transport stdio
//
// stdout: exactly one JSON line.
//   {"ok":true,"text":...,"isError":...,"elicitations":[...],"mode":...}  exit 0
//   {"ok":false,"error":"..."}                                            exit 1
// Diagnostics go to stderr. The whole run is bounded by --timeout (default 20 s).

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const USAGE =
  'usage: deploy_client.mjs [--mode auto|legacy] [--answer accept|decline|cancel] [--env ENV] [--timeout S]\n' +
  '                         (--url URL [--token TOKEN] | --stdio -- CMD ARGS...)';

function parseArgs(argv) {
  const opts = { mode: 'auto', answer: 'accept', env: 'staging', timeout: 20, url: null, token: null, stdio: false, cmd: [] };
  const sep = argv.indexOf('--');
  if (sep >= 0) {
    opts.cmd = argv.slice(sep + 1);
    argv = argv.slice(0, sep);
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value\n${USAGE}`);
      return argv[++i];
    };
    switch (a) {
      case '--mode': opts.mode = val(); break;
      case '--answer': opts.answer = val(); break;
      case '--env': opts.env = val(); break;
      case '--timeout': opts.timeout = Number(val()); break;
      case '--url': opts.url = val(); break;
      case '--token': opts.token = val(); break;
      case '--stdio': opts.stdio = true; break;
      default: throw new Error(`unknown argument ${a}\n${USAGE}`);
    }
  }
  if (!['auto', 'legacy'].includes(opts.mode)) throw new Error(`--mode must be auto or legacy\n${USAGE}`);
  if (!['accept', 'decline', 'cancel'].includes(opts.answer)) throw new Error(`--answer must be accept, decline or cancel\n${USAGE}`);
  if (Boolean(opts.url) === opts.stdio) throw new Error(`give exactly one of --url or --stdio\n${USAGE}`);
  if (opts.stdio && opts.cmd.length === 0) throw new Error(`--stdio needs a command after --\n${USAGE}`);
  if (!(opts.timeout > 0)) throw new Error('--timeout must be a positive number of seconds');
  return opts;
}

async function run(opts, state) {
  const elicitations = state.elicitations;
  const client = new Client(
    { name: 'mrtr-lab-ts-driver', version: '0.1.0' },
    {
      capabilities: { elicitation: { form: {} } },
      // NB: the SDK's default is 'legacy'; 'auto' must be asked for explicitly.
      versionNegotiation: { mode: opts.mode },
    },
  );
  state.client = client;

  client.setRequestHandler('elicitation/create', async (request) => {
    elicitations.push(request.params?.message ?? '');
    if (opts.answer === 'accept') return { action: 'accept', content: { confirm: true } };
    return { action: opts.answer };
  });

  let transport;
  if (opts.url) {
    const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
    transport = new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers } });
  } else {
    transport = new StdioClientTransport({
      command: opts.cmd[0],
      args: opts.cmd.slice(1),
      // Pass our whole environment (the SDK default keeps only a few vars such
      // as PATH/HOME), so venv and PYTHONPATH settings reach the server.
      env: { ...process.env },
      stderr: 'inherit',
    });
  }
  const timeoutMs = Math.round(opts.timeout * 1000);
  await client.connect(transport, { timeout: timeoutMs });
  const result = await client.callTool({ name: 'deploy', arguments: { env: opts.env } }, { timeout: timeoutMs });
  const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  return {
    ok: true,
    text,
    isError: Boolean(result.isError),
    elicitations,
    mode: opts.mode,
    protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
    client: 'typescript-sdk',
  };
}

function describe(err) {
  if (err == null) return 'unknown error';
  const name = err.name && err.name !== 'Error' ? `${err.name}: ` : '';
  const code = err.code !== undefined ? ` (code ${err.code})` : '';
  return `${name}${err.message ?? String(err)}${code}`;
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.stdout.write(JSON.stringify({ ok: false, error: err.message.split('\n')[0] }) + '\n');
    return 1;
  }
  const state = { elicitations: [], client: null };
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout after ${opts.timeout}s`)), opts.timeout * 1000);
  });
  let out;
  let code;
  try {
    out = await Promise.race([run(opts, state), deadline]);
    code = 0;
  } catch (err) {
    if (err?.stack) process.stderr.write(`${err.stack}\n`);
    out = { ok: false, error: describe(err), mode: opts.mode, client: 'typescript-sdk' };
    code = 1;
  } finally {
    clearTimeout(timer);
  }
  // Closing ends the stdio child / HTTP session; never let it hang the driver.
  if (state.client) {
    await Promise.race([state.client.close().catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stdout.write(JSON.stringify({ ok: false, error: describe(err) }) + '\n');
    process.exit(1);
  },
);
