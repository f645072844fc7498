// The lesson's server again, on the official TypeScript SDK (@modelcontextprotocol/server 2.4.0),
// over stdio. Same tool, same ticket, same six checks to write between the "step" markers.
// McpServer turns whatever a tool throws into an isError tool result, so this server serves tools/call
// itself (see buildServer) and its errors reach the wire as the Python track's do: every refused ticket
// gets -32602 "Invalid or expired requestState", a malformed answer -32602 "Invalid inputResponses: ...".
//
//   MRTR_TICKET_TTL=3 python -m mrtr check --stdio "node server.js"   (after compiling with tsc)
//
// Environment: MRTR_PRINCIPAL (who is calling, default bob), MRTR_TICKET_TTL (seconds, default 120),
// LESSON_SIGNING_KEY (the key tickets are signed with; every process must share it).
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

import { McpServer, ProtocolError, ProtocolErrorCode, inputRequired, isInputRequiredResult } from '@modelcontextprotocol/server';
import type { CallToolResult, JSONRPCMessage, ServerContext } from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const PRINCIPAL = process.env.MRTR_PRINCIPAL || 'bob';
const TICKET_TTL = Number(process.env.MRTR_TICKET_TTL || 120);
const KEY = process.env.LESSON_SIGNING_KEY ?? 'lesson-only-key-never-use-in-production';

// What a ticket carries, readable by anyone: "t1.<payload>.<signature>".
interface Claims {
  sub: string; // who asked
  exp: number; // when it stops being valid (seconds since the epoch)
  jti: string; // this ticket's id
  req: string; // the request it belongs to
  asked: string[]; // the questions it asked
  work: { env: string }; // the half-done work
}

type Answers = Record<string, unknown>;

// Ticket ids already spent, with the time each expires (in memory: one process, one user).
const REDEEMED = new Map<string, number>();

const confirmForm = z.object({ confirm: z.boolean() });

// -- tickets: minting and reading (given) ---------------------------------------------------------

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function requestDigest(tool: string, args: unknown): string {
  return createHash('sha256').update(canonical([tool, args])).digest('hex').slice(0, 24);
}

function signature(payload: string): string {
  return createHmac('sha256', KEY).update(`t1.${payload}`).digest('base64url');
}

function mintTicket(tool: string, args: { env: string }): string {
  const claims: Claims = {
    sub: PRINCIPAL,
    exp: Date.now() / 1000 + TICKET_TTL,
    jti: randomUUID(),
    req: requestDigest(tool, args),
    asked: ['confirm'],
    work: { env: args.env },
  };
  const payload = Buffer.from(canonical(claims)).toString('base64url');
  return `t1.${payload}.${signature(payload)}`;
}

// The payload, decoded WITHOUT checking anything (what any holder can read).
function readClaims(ticket: string): Claims | undefined {
  const parts = ticket.split('.');
  if (parts.length !== 3 || parts[0] !== 't1') return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    return claims !== null && typeof claims === 'object' ? (claims as Claims) : undefined;
  } catch {
    return undefined;
  }
}

// -- the six checks: your part --------------------------------------------------------------------
// They run in this order. Steps 1-4 and 6 return true when the ticket passes, and the first false
// refuses the retry. Step 5 reads the answer instead: 'yes', 'no', 'missing', or it throws BadAnswer.

type Said = 'yes' | 'no' | 'missing';

// An answer is there but does not fit its question. The client gets the course's malformed-answer error:
// -32602, "Invalid inputResponses: '<key>': <why>", data {reason: "invalid_input_response", key}.
class BadAnswer extends Error {
  constructor(why: string, readonly key?: string) {
    super(key === undefined ? why : `'${key}': ${why}`);
  }
}

// -- step: signature --
function checkSignature(ticket: string): boolean {
  // Step 1: the signature must still belong to the payload the server wrote.
  const [prefix, payload, sent] = ticket.split('.');
  if (prefix !== 't1' || payload === undefined || sent === undefined) return false;
  const expected = Buffer.from(signature(payload));
  const given = Buffer.from(sent);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
// -- end of step --

// -- step: principal --
function checkPrincipal(claims: Claims): boolean {
  // Step 2: the ticket must belong to whoever is calling now.
  return claims.sub === PRINCIPAL;
}
// -- end of step --

// -- step: expiry --
function checkExpiry(claims: Claims): boolean {
  // Step 3: the ticket must come back before it expires.
  return typeof claims.exp === 'number' && Date.now() / 1000 < claims.exp;
}
// -- end of step --

// -- step: request --
function checkSameRequest(claims: Claims, tool: string, args: unknown): boolean {
  // Step 4: the retry must be the very request the ticket was minted for.
  return claims.req === requestDigest(tool, args);
}
// -- end of step --

// -- step: answer --
function checkAnswerIncluded(claims: Claims, responses: Answers): Said {
  // Step 5: what the user answered to every question the ticket asked: 'yes', 'no' or 'missing'.
  let said: Said = 'yes';
  for (const key of claims.asked ?? []) {
    if (!(key in responses)) return 'missing';
    const answer = responses[key] as { action?: unknown; content?: { confirm?: unknown } } | null;
    if (answer === null || typeof answer !== 'object' || !['accept', 'decline', 'cancel'].includes(String(answer.action))) {
      throw new BadAnswer('the answer is not an elicitation result (an object whose action is accept, decline or cancel)', key);
    }
    if (answer.action !== 'accept') {
      said = 'no'; // declined or cancelled: the call ends without the work
      continue;
    }
    const confirm = answer.content?.confirm;
    if (typeof confirm !== 'boolean') throw new BadAnswer('an accepted answer needs a true-or-false confirm in its content', key);
    if (!confirm) said = 'no';
  }
  return said;
}
// -- end of step --

// -- step: single-use --
function checkNotRedeemed(claims: Claims): boolean {
  // Step 6: a ticket is spent once; remember it until it expires.
  const now = Date.now() / 1000;
  for (const [jti, exp] of REDEEMED) if (exp <= now) REDEEMED.delete(jti);
  if (typeof claims.jti !== 'string' || REDEEMED.has(claims.jti)) return false;
  REDEEMED.set(claims.jti, claims.exp);
  return true;
}
// -- end of step --

// -- the deploy tool (given) ----------------------------------------------------------------------

class Refused extends Error {}

function say(text: string, isError = false): CallToolResult {
  return { content: [{ type: 'text', text }], isError };
}

function ask(args: { env: string }, env: string) {
  return inputRequired({
    inputRequests: { confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: confirmForm }) },
    requestState: mintTicket('deploy', args),
  });
}

function deploy(args: { env: string }, ticket: string | undefined, responses: Answers) {
  if (ticket === undefined) return ask(args, args.env); // round one: ask, and forget everything
  if (!checkSignature(ticket)) throw new Refused('signature');
  const claims = readClaims(ticket);
  if (claims === undefined) throw new Refused('the ticket cannot be read');
  if (!checkPrincipal(claims)) throw new Refused('principal');
  if (!checkExpiry(claims)) throw new Refused('expiry');
  if (!checkSameRequest(claims, 'deploy', args)) throw new Refused('request');
  const target = String(claims.work?.env ?? args.env); // the work comes from the ticket the checks let through
  const said = checkAnswerIncluded(claims, responses);
  if (said === 'missing') return ask(args, target); // an answer is missing: ask again, with a fresh ticket
  // Single use last: a refused or unanswered retry must never spend the ticket.
  if (!checkNotRedeemed(claims)) throw new Refused('single-use');
  if (said === 'yes') return say(`deployed to ${target}`);
  return say(`nothing was deployed to ${target}: the user did not confirm`);
}

const deployArgs = z.object({ env: z.string().min(1) });

// The tool. Every refused ticket gets the one frozen JSON-RPC error, the reason on stderr only; a malformed
// answer gets the course's error of its own. Both are thrown for tools/call (below) to pass through.
async function deployTool({ env }: { env: string }, ctx: ServerContext) {
  // The SDK hands the tool only the entries that are objects and lists the other keys apart; put those back
  // (as null), so step 5 sees that something came under the key and that it is no answer.
  const responses: Answers = { ...(ctx.mcpReq.inputResponses ?? {}) };
  for (const key of ctx.mcpReq.droppedInputResponseKeys ?? []) responses[key] = null;
  try {
    return deploy({ env }, ctx.mcpReq.requestState<string>(), responses);
  } catch (error) {
    if (error instanceof BadAnswer) throw malformed(error);
    if (!(error instanceof Refused)) throw error;
    console.error(`[server] ticket refused at the ${error.message} check`);
    throw refused(); // the same error whatever the reason
  }
}

function buildServer(): McpServer {
  // verify runs before the handler on every retry; this server does its checks in the tool, so it
  // only hands the raw ticket through.
  const server = new McpServer(
    { name: 'build-the-checks-ts', version: '1.0.0' },
    { capabilities: { tools: {} }, requestState: { verify: async (state: string) => state } },
  );
  server.registerTool(
    'deploy',
    { description: 'Deploy the current build to an environment. Asks the user to confirm first.', inputSchema: deployArgs },
    deployTool,
  );
  // McpServer's own tools/call turns whatever a tool throws into an isError result, the ticket refusal and the
  // malformed-answer error too; so tools/call is served here, by the same tool, and a ProtocolError it throws
  // reaches the wire.
  server.server.removeRequestHandler('tools/call');
  server.server.setRequestHandler('tools/call', async (request, ctx) => {
    if (request.params.name !== 'deploy') {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    }
    const args = deployArgs.safeParse(request.params.arguments ?? {});
    if (!args.success) return say(`Invalid arguments for deploy: ${args.error.message}`, true);
    const result = await deployTool(args.data, ctx);
    return isInputRequiredResult(result) ? result : server.server.projectCallToolResult(result, undefined);
  });
  return server;
}

// The spec: state that fails verification MUST be rejected; the official conformance suite accepts only a
// JSON-RPC error for it (input-required-result-tampered-state). This is the one the Python track sends.
function refused(): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid or expired requestState',
    { reason: 'invalid_request_state' });
}

function malformed(error: BadAnswer): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid inputResponses: ${error.message}`,
    { reason: 'invalid_input_response', ...(error.key === undefined ? {} : { key: error.key }) });
}

// At 2.4.0 serveStdio checks the protocol version on a connection's opening request only; this guard
// answers any later request that names a version this server does not speak with -32022, as the
// checker's version probe expects.
const SUPPORTED = ['2026-07-28'];

function versionGuard(transport: StdioServerTransport): StdioServerTransport {
  const start = transport.start.bind(transport);
  transport.start = async () => {
    const deliver = transport.onmessage;
    transport.onmessage = (message: JSONRPCMessage) => {
      const request = message as { id?: string | number; params?: { _meta?: Record<string, unknown> } };
      const version = request.params?._meta?.['io.modelcontextprotocol/protocolVersion'];
      if (request.id !== undefined && typeof version === 'string' && !SUPPORTED.includes(version)) {
        void transport.send({ jsonrpc: '2.0', id: request.id, error: { code: -32022,
          message: 'Unsupported protocol version', data: { supported: SUPPORTED, requested: version } } });
        return;
      }
      deliver?.(message);
    };
    await start();
  };
  return transport;
}

serveStdio(buildServer, { transport: versionGuard(new StdioServerTransport()) });
