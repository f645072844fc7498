// The lesson's deploy tool, written against the TypeScript SDK v2 (server side).
// It asks "Deploy to <env>?" with input_required, deploys only on a confirmed retry,
// and stops (without asking again) when the user declines or cancels; a malformed answer gets an error.
import {
  McpServer,
  acceptedContent,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
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
    {
      description: 'Deploy the current build. Asks the user to confirm first.',
      inputSchema: z.object({ env: z.string().min(1) }),
    },
    async ({ env }, ctx) => {
      const pending = ctx.mcpReq.requestState<PendingDeploy>(); // verified, or undefined
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');

      if (pending === undefined || answer.kind === 'missing') {
        // Round one, or a retry without the answer: ask, with a fresh ticket.
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: confirmForm }),
          },
          requestState: await tickets.mint({ env, id: crypto.randomUUID() }, ctx),
        });
      }

      // Not done by the codec: same request.
      if (pending.env !== env) return refused();

      // The answer rule: a malformed answer gets an error of its own and spends nothing.
      const reply = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmForm);
      if (answer.kind !== 'elicit' || (answer.action === 'accept' && reply === undefined)) {
        return say('Invalid inputResponses: confirm must be an elicitation answer with a true or false confirm', true);
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
    },
  );

  return server;
}
