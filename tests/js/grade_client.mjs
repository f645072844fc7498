#!/usr/bin/env node
// The OFFICIAL TypeScript SDK client (@modelcontextprotocol/client 2.4.0) as a client for
// `mrtr check-client --command`.
//
// Why: the lab grades the official clients side by side with its own (docs/client/official-clients.md), so this
// driver does what a user's program would: list the tools and call each once through the SDK's own automatic
// input_required loop, answering every form question from its schema (default, first enum value, least number,
// true) and every URL-mode question with accept. It declares form and URL elicitation. Its simulated user chooses as
// MRTR_CHECK_CLIENT_CHOICES says (question key to action; the handler sees no key, so it is read from the message). The grading server's URL is
// the last argument:
//
//   mrtr check-client --command "node tests/js/grade_client.mjs"
//
// One line per tool on stdout says how the SDK ended the call; a tool that throws does not stop the others.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

function answerFor(schema) {
  const content = {};
  for (const [name, prop] of Object.entries(schema?.properties ?? {})) {
    if ('default' in prop) content[name] = prop.default;
    else if (Array.isArray(prop.enum) && prop.enum.length) content[name] = prop.enum[0];
    else if (prop.type === 'boolean') content[name] = true;
    else if (prop.type === 'integer' || prop.type === 'number') content[name] = prop.minimum ?? 0;
    else content[name] = 'yes';
  }
  return content;
}

function usersChoice(message) {
  let choices = {};
  try { choices = JSON.parse(process.env.MRTR_CHECK_CLIENT_CHOICES || '{}'); } catch { choices = {}; }
  const choice = choices?.[String(message ?? '').split(':')[0]];
  return typeof choice === 'string' ? choice : undefined;
}

function argumentsFor(schema) {
  const args = {};
  for (const [name, prop] of Object.entries(schema?.properties ?? {})) if ('default' in prop) args[name] = prop.default;
  return args;
}

async function main() {
  const url = process.argv[process.argv.length - 1];
  const client = new Client(
    { name: 'mrtr-lab-grade-ts', version: '0.1.0' },
    { capabilities: { elicitation: { form: {}, url: {} } }, versionNegotiation: { mode: 'auto' } },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    if (request.params?.mode === 'url') return { action: 'accept' };
    const choice = usersChoice(request.params?.message);
    if (choice === 'decline' || choice === 'cancel') return { action: choice };
    return { action: 'accept', content: answerFor(request.params?.requestedSchema) };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)), { timeout: 20000 });
  const { tools } = await client.listTools();
  for (const tool of tools) {
    try {
      const result = await client.callTool({ name: tool.name, arguments: argumentsFor(tool.inputSchema) }, { timeout: 20000 });
      process.stdout.write(`${tool.name}: ${result.isError ? 'error' : 'complete'}\n`);
    } catch (err) {
      const first = String(err?.message ?? err).split('\n')[0].slice(0, 160);
      process.stdout.write(`${tool.name}: raised ${err?.name ?? 'Error'}: ${first}\n`);
    }
  }
  await client.close().catch(() => {});
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`session failed: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
