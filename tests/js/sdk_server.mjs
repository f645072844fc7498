// A peer for the checker: the official TypeScript SDK server (@modelcontextprotocol/server 2.4.0)
// serving a `deploy` tool over Streamable HTTP on 127.0.0.1. Test-only.
//
//   node tests/js/sdk_server.mjs --port 8125 [--variant docs|lesson] [--ttl 120]
//   URL http://127.0.0.1:PORT/mcp ; tokens bob-token -> bob, alice-token -> alice (--token NAME=TOKEN)
//
// Variants:
//   docs    the tool as the SDK's own MRTR example builds it: createRequestStateCodec with a key and a
//           TTL (--ttl) and no `bind`; the handler trusts the env saved in the verified ticket and asks
//           again until the box is ticked. No redeemed store, no argument binding.
//   lesson  the lesson's snippet (lessons/when-the-server-needs-input/snippets/deploy.ts) itself:
//           transpiled with the pinned TypeScript at start-up and served from its buildServer() factory,
//           so the checks the lesson claims for it are the checks measured here (its TTL is 120 s).
//
// Principals: the SDK's bearer-auth gate (requireBearerAuth) with a fixed token table as verifier;
// each token becomes AuthInfo {clientId: "mrtr-checker", extra: {sub: NAME}} handed to the SDK's
// createMcpHandler as authInfo. Unknown or missing tokens get the SDK's 401 challenge.
// The SDK ships no node:http adapter at 2.4.0 (@modelcontextprotocol/node stops at 2.1), so a small
// bridge below turns node:http requests into fetch Requests and streams the Response back.
//
// Test clock: when MRTR_PEER_CLOCK_FILE names a file, Date.now() is the real time plus the seconds
// written in that file (the codec reads Date.now() for exp), so a test moves past expiry at once.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  McpServer,
  OAuthError,
  OAuthErrorCode,
  acceptedContent,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  requireBearerAuth,
} from '@modelcontextprotocol/server';
import ts from 'typescript';
import * as z from 'zod';

const HERE = dirname(fileURLToPath(import.meta.url));
const SNIPPET = resolve(HERE, '../../lessons/when-the-server-needs-input/snippets/deploy.ts');
const TEST_KEY = 'mrtr-lab-test-peer-key-0123456789abcdef';

function parseArgs(argv) {
  const opts = { port: 8125, variant: 'docs', ttl: 120, tokens: [] };
  for (let i = 0; i < argv.length; i += 1) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--port') opts.port = Number(value);
    else if (flag === '--variant') opts.variant = value;
    else if (flag === '--ttl') opts.ttl = Number(value);
    else if (flag === '--token') opts.tokens.push(value);
    else throw new Error(`unknown argument ${flag}`);
    i += 1;
  }
  if (!['docs', 'lesson'].includes(opts.variant)) throw new Error('--variant is docs or lesson');
  if (opts.tokens.length === 0) opts.tokens = ['bob=bob-token', 'alice=alice-token'];
  return opts;
}

function installTestClock() {
  const file = process.env.MRTR_PEER_CLOCK_FILE;
  if (!file) return;
  const realNow = Date.now.bind(Date);
  Date.now = () => {
    let offset = 0;
    try {
      offset = Number(readFileSync(file, 'utf8').trim() || 0) || 0;
    } catch {
      offset = 0;
    }
    return realNow() + offset * 1000;
  };
}

// The SDK's own MRTR example, rebuilt for this peer (facts from the SDK; written here).
function docsFactory(ttlSeconds) {
  const schema = { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] };
  const codec = createRequestStateCodec({ key: process.env.TICKET_KEY ?? TEST_KEY, ttlSeconds });
  return () => {
    const server = new McpServer(
      { name: 'mrtr-peer-sdk-typescript', version: '2.4.0' },
      { capabilities: { tools: {} }, requestState: { verify: codec.verify } },
    );
    server.registerTool(
      'deploy',
      { description: 'Deploy the current build. Asks the user to confirm first.', inputSchema: z.object({ env: z.string() }) },
      async ({ env }, ctx) => {
        const state = ctx.mcpReq.requestState();
        const target = state?.env ?? env;
        const confirmed = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
        if (!confirmed?.confirm) {
          return inputRequired({
            inputRequests: { confirm: inputRequired.elicit({ message: `Deploy to ${target}?`, requestedSchema: schema }) },
            requestState: await codec.mint({ step: 'confirm', env: target }),
          });
        }
        return { content: [{ type: 'text', text: `deployed to ${target}` }] };
      },
    );
    return server;
  };
}

// The lesson's snippet, as shown to learners: type-stripped, its bare imports pointed at this folder's packages.
async function lessonFactory() {
  process.env.TICKET_KEY ??= TEST_KEY;
  const source = readFileSync(SNIPPET, 'utf8');
  let js = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  for (const name of ['@modelcontextprotocol/server', 'zod']) {
    js = js.replaceAll(`'${name}'`, `'${import.meta.resolve(name)}'`);
  }
  const module = await import(`data:text/javascript;base64,${Buffer.from(js).toString('base64')}`);
  return module.buildServer;
}

function tokenTable(pairs) {
  const principals = new Map();
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at < 1) throw new Error(`--token wants NAME=TOKEN, got ${pair}`);
    principals.set(pair.slice(at + 1), pair.slice(0, at));
  }
  return {
    async verifyAccessToken(token) {
      const name = principals.get(token);
      if (name === undefined) throw new OAuthError(OAuthErrorCode.InvalidToken, 'unknown token');
      return { token, clientId: 'mrtr-checker', scopes: [], expiresAt: Math.floor(Date.now() / 1000) + 3600, extra: { sub: name } };
    },
  };
}

async function toFetchRequest(req, port) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks);
  return new Request(`http://127.0.0.1:${port}${req.url}`, { method: req.method, headers, body });
}

async function sendFetchResponse(res, response) {
  res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
  if (response.body) {
    for await (const chunk of response.body) res.write(chunk);
  }
  res.end();
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  installTestClock();
  const factory = opts.variant === 'lesson' ? await lessonFactory() : docsFactory(opts.ttl);
  const handler = createMcpHandler(factory, { onerror: (e) => console.error(`[sdk peer] ${e.message}`) });
  const gate = requireBearerAuth({ verifier: tokenTable(opts.tokens) });
  const http = createServer((req, res) => {
    void (async () => {
      try {
        const request = await toFetchRequest(req, opts.port);
        if (new URL(request.url).pathname !== '/mcp') {
          await sendFetchResponse(res, new Response('not found', { status: 404 }));
          return;
        }
        const auth = await gate(request);
        const response = auth instanceof Response ? auth : await handler.fetch(request, { authInfo: auth });
        await sendFetchResponse(res, response);
      } catch (error) {
        console.error(`[sdk peer] ${error?.stack ?? error}`);
        if (!res.headersSent) res.writeHead(500);
        res.end();
      }
    })();
  });
  const stop = async () => {
    await handler.close();
    http.close();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  http.listen(opts.port, '127.0.0.1', () => {
    console.error(`[sdk peer] ${opts.variant} on http://127.0.0.1:${opts.port}/mcp`);
  });
}

await main();
