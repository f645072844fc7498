// The lesson's deploy tool, written against the TypeScript SDK v2 (server side).
// It asks "Deploy to <env>?" with input_required, deploys only on a confirmed retry,
// and stops (without asking again) when the user declines or cancels. A malformed answer gets the
// course's JSON-RPC error: -32602 "Invalid inputResponses: 'confirm': ..." with data {reason, key}.
import {
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  acceptedContent,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  isInputRequiredResult,
} from '@modelcontextprotocol/server';
import type { CallToolResult, ServerContext } from '@modelcontextprotocol/server';
import * as z from 'zod';

// What this tool saves in the ticket between the two rounds: the request it was
// minted for, and an id so a spent ticket can be recognised.
interface PendingDeploy {
  env: string;
  id: string;
}

// The form the user fills in: a single tick box.
const confirmForm = z.object({ confirm: z.boolean() });

// Who is calling, from the access token the HTTP layer verified (your token
// verifier decides what goes into authInfo; here the user sits in extra.sub).
function caller(ctx: ServerContext): string {
  const auth = ctx.http?.authInfo;
  return `${auth?.clientId ?? ''}\0${String(auth?.extra?.sub ?? '')}`;
}

// One codec per process, built from the key every replica shares (32 bytes or more),
// so a ticket minted by replica A verifies on replica B. It signs, expires after 120 s,
// and `bind` ties the ticket to the method and the caller: verify recomputes it on the
// retry and refuses a ticket that another user (or another method) sends back.
const tickets = createRequestStateCodec<PendingDeploy>({
  key: process.env.TICKET_KEY!,
  ttlSeconds: 120,
  bind: (ctx) => `${ctx.mcpReq.method}\0${caller(ctx)}`,
});

// Ticket ids already redeemed. A Set works for one process; replicas must share it
// (for example a Redis set whose entries expire with the tickets).
const redeemed = new Set<string>();

function say(text: string, isError = false): CallToolResult {
  return { content: [{ type: 'text', text }], isError };
}

// Our own refusals are tool errors (McpServer turns anything a tool throws into one),
// while the codec's are -32602 errors. Both use the same words and never name the check.
const refused = () => say('Invalid or expired requestState', true);

// The answer rule: an answer that is there but does not fit its question gets an error of its own, not
// the ticket refusal, and spends nothing. It is a JSON-RPC error, so the tool throws it (see buildServer).
function malformed(why: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid inputResponses: 'confirm': ${why}`,
    { reason: 'invalid_input_response', key: 'confirm' });
}

const deployArgs = z.object({ env: z.string().min(1) });

async function deployTool({ env }: { env: string }, ctx: ServerContext) {
  const pending = ctx.mcpReq.requestState<PendingDeploy>(); // verified, or undefined
  const ask = async () => inputRequired({
    inputRequests: { confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: confirmForm }) },
    requestState: await tickets.mint({ env, id: crypto.randomUUID() }, ctx),
  });
  if (pending === undefined) return ask(); // round one: ask, with a fresh ticket

  // Not done by the codec: same request.
  if (pending.env !== env) return refused();

  // Only an answer that is not there at all is asked again. The SDK hands over only the entries that are
  // objects (the keys of the others are in droppedInputResponseKeys), and inputResponse reads an object
  // without a valid action as missing too: both are answers that came malformed.
  const dropped = ctx.mcpReq.droppedInputResponseKeys?.includes('confirm') ?? false;
  if (!dropped && ctx.mcpReq.inputResponses?.['confirm'] === undefined) return ask();
  const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
  if (dropped || answer.kind !== 'elicit') throw malformed('the answer is not an elicitation result');
  const reply = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmForm);
  if (answer.action === 'accept' && reply === undefined) {
    throw malformed('an accepted answer needs a true-or-false confirm in its content');
  }

  // Not done by the codec either: each ticket redeemed once.
  if (redeemed.has(pending.id)) return refused();
  redeemed.add(pending.id);

  // Decline or cancel ends the call: no endless re-asking.
  if (answer.action !== 'accept') {
    return say(`nothing was deployed to ${env}: the user chose ${answer.action}`);
  }
  if (reply?.confirm !== true) {
    return say(`nothing was deployed to ${env}: the box was not ticked`);
  }
  return say(`deployed to ${env}`);
}

// A factory: the SDK builds a fresh server for each HTTP request, so the codec and
// the redeemed set live outside it. Serve it with createMcpHandler(buildServer) or
// serveStdio(buildServer).
export function buildServer(): McpServer {
  const server = new McpServer(
    { name: 'deploy-demo', version: '1.0.0' },
    { requestState: { verify: tickets.verify } }, // runs before the handler on every retry
  );
  server.registerTool(
    'deploy',
    { description: 'Deploy the current build. Asks the user to confirm first.', inputSchema: deployArgs },
    deployTool,
  );
  // McpServer's own tools/call turns whatever a tool throws into an isError result, the malformed-answer
  // error too; so tools/call is served here, by the same tool, and the ProtocolError reaches the wire.
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
