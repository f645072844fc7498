// The lesson's deploy tool, written against the TypeScript SDK v2 (server side).
// It asks "Deploy to <env>?" with input_required, and deploys only on a confirmed retry.
import { McpServer, acceptedContent, createRequestStateCodec, inputRequired } from '@modelcontextprotocol/server';
import * as z from 'zod';

// What this tool saves in the ticket between the two rounds.
interface PendingDeploy {
  env: string;
}

// The form the user fills in: a single tick box.
const confirmForm = z.object({ confirm: z.boolean() });

// One codec per process, built from the key every replica shares (32 bytes or more), so a
// ticket minted by replica A verifies on replica B. Tickets are signed and expire after 120 s.
const tickets = createRequestStateCodec<PendingDeploy>({
  key: process.env.TICKET_KEY!,
  ttlSeconds: 120,
});

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
    // On a retry, trust the environment saved in the verified ticket, not the arguments.
    const pending = ctx.mcpReq.requestState<PendingDeploy>();
    const target = pending?.env ?? env;

    // undefined on round one, and whenever the answer is missing, declined or malformed.
    const reply = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmForm);

    if (reply === undefined) {
      // End this round: one question, and the work so far minted into a fresh ticket.
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: `Deploy to ${target}?`,
            requestedSchema: confirmForm,
          }),
        },
        requestState: await tickets.mint({ env: target }, ctx),
      });
    }

    if (!reply.confirm) {
      return { content: [{ type: 'text', text: `nothing was deployed to ${target}` }] };
    }
    // Not done for you by the codec: a request digest and a record of spent tickets.
    return { content: [{ type: 'text', text: `deployed to ${target}` }] };
  },
);

export default server;
