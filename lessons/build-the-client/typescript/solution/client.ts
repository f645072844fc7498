// The lesson's client, on the official TypeScript SDK's low-level client (@modelcontextprotocol/client 2.4.0)
// in its manual input_required mode: the SDK sends each request (a fresh JSON-RPC id, the 2026-07-28 headers
// and _meta) and hands every input_required result back; this file runs the loop by hand, with the steps to
// write between the "step" markers.
//
//   npm install && npm run build
//   python -m mrtr check-client --command "node build/starter/client.js"   (build/solution/client.js: the answer)
//
// The server's URL is the last argument. The client lists the tools and calls each once; one line per tool
// says how the call ended, and the exit status is 1 when any call was refused or stopped.
// Environment: MRTR_DECLARE (the elicitation modes declared, default "form,url"), MRTR_USER_SAYS (what the
// simulated user chooses for every question: accept, decline or cancel; default accept), MRTR_CHECK_CLIENT_CHOICES
// (a choice per question key, as mrtr check-client --user-choices sets it).
import { Client, SdkError, StreamableHTTPClientTransport, isInputRequiredResult } from '@modelcontextprotocol/client';
import type { CallToolRequest, CallToolResult, InputRequiredResult, Tool } from '@modelcontextprotocol/client';

// The call's params, with the two members a retry adds (the SDK passes them through as they are).
type Params = CallToolRequest['params'] & { inputResponses?: Record<string, Answer>; requestState?: string };
type Choice = 'accept' | 'decline' | 'cancel';
type Answer = { action: Choice; content?: Record<string, string | number | boolean> };
type Schema = { properties?: Record<string, Property> };
type Property = { type?: string; enum?: unknown[]; default?: unknown; minimum?: number; maximum?: number };

// What this client declares on every request (the SDK puts it in _meta): form mode always, URL mode unless
// MRTR_DECLARE leaves it out.
const MODES = (process.env.MRTR_DECLARE ?? 'form,url').split(',').map((m) => m.trim());
const DECLARED = { elicitation: Object.fromEntries(MODES.map((m) => [m, {}])) };
// The simulated user: what they choose for every question the client shows them.
const USER_SAYS: Choice = (['accept', 'decline', 'cancel'] as const).find((c) => c === process.env.MRTR_USER_SAYS)
  ?? 'accept';
// A net under the loop, whatever the rounds step decides: the lesson's safety, not your bound.
const SAFETY_NET = 30;

// The call cannot go on: the client says why and does not retry (the given loop prints it).
class Refused extends Error {}
// The rounds step stopped the call: the server kept asking.
class Stopped extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

// -- step: retry --
function buildRetry(first: Params, answers: Record<string, Answer> | undefined, ticket: string | undefined): Params {
  // Step 1: the retry is the same request again, plus this round's answers and the ticket.
  // The same tool, the same arguments, the same _meta (copied, never rebuilt); inputResponses only when
  // there are answers, requestState only when there is a ticket, and the ticket exactly as the server wrote
  // it. The SDK gives every request a new JSON-RPC id, so a retry never reuses the first call's id.
  const retry: Params = { ...first };
  if (answers !== undefined) retry.inputResponses = answers;
  if (ticket !== undefined) retry.requestState = ticket;
  return retry;
}
// -- end of step --

// -- step: answers --
function valueFor(property: Property): string | number | boolean {
  // What the user's answer to one field is, typed by the field's schema.
  const value = property.default;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  const choice = property.enum?.find((v): v is string => typeof v === 'string');
  if (choice !== undefined) return choice;
  if (property.type === 'boolean') return true;
  if (property.type === 'integer' || property.type === 'number') {
    const least = property.minimum ?? Math.min(0, property.maximum ?? 0);
    return property.type === 'integer' ? Math.ceil(least) : least;
  }
  return 'yes';
}

function pickAnswers(result: InputRequiredResult, choose: (key: string, params: Record<string, unknown>) => Answer):
    Record<string, Answer> | undefined {
  // Step 2: answer exactly the keys this result asks, and nothing from an earlier round.
  // A round with no questions (only a ticket) has no answers at all: undefined, so no inputResponses.
  const asked = Object.entries(result.inputRequests ?? {});
  if (asked.length === 0) return undefined;
  const answers: Record<string, Answer> = {};
  for (const [key, request] of asked) {
    const params: unknown = request.params;
    answers[key] = choose(key, isObject(params) ? params : {});
  }
  return answers;
}

function formAnswer(params: Record<string, unknown>, said: Choice): Answer {
  // The user's choice, and on accept a value for every field of the form.
  if (said !== 'accept') return { action: said };
  const schema = (isObject(params.requestedSchema) ? params.requestedSchema : {}) as Schema;
  const content: Record<string, string | number | boolean> = {};
  for (const [name, property] of Object.entries(schema.properties ?? {})) content[name] = valueFor(property);
  return { action: 'accept', content };
}
// -- end of step --

// -- step: carry --
function carryTicket(result: InputRequiredResult): string | undefined {
  // Step 3: the ticket to send back is this result's own, the newest, exactly as it came.
  // None when the result has none (never an older one, never one made up); a fresh call starts with none.
  return typeof result.requestState === 'string' ? result.requestState : undefined;
}
// -- end of step --

// -- step: rounds --
const MAX_ROUNDS = 10;
const FIRST_PAUSE_MS = 100;
const LONGEST_PAUSE_MS = 1000;

function pauseBefore(round: number, result: InputRequiredResult): number {
  // Step 4: how long to wait before retry number `round` (1, 2, ...), or throw Stopped to give up.
  // A server may ask forever: stop after MAX_ROUNDS retries and say so. A round that asks nothing (only a
  // ticket) is retried after a pause that grows; a round with questions waited for the user already.
  if (round > MAX_ROUNDS) throw new Stopped(`the server still asked after ${MAX_ROUNDS} rounds; stopped`);
  if (Object.keys(result.inputRequests ?? {}).length > 0) return 0;
  return Math.min(FIRST_PAUSE_MS * 2 ** (round - 1), LONGEST_PAUSE_MS);
}
// -- end of step --

// -- step: url --
function pageAnswer(params: Record<string, unknown>, said: Choice): Answer {
  // Step 5: a URL-mode question: the user is shown the page and chooses.
  // Accept means the user consents to go there: an action and no content (there is no form to fill).
  // Decline and cancel go back as the user chose them.
  void params; // a real client shows params.message and params.url to the user here
  return { action: said };
}
// -- end of step --

// -- step: refuse --
function refusal(result: InputRequiredResult): string | undefined {
  // Step 6: why this input_required cannot be acted on, or undefined when it can.
  // (The SDK itself refuses an unknown resultType and an input_required with neither member.)
  // Refuse a result that asks nothing and carries no ticket, a request that is not an object, any kind other
  // than elicitation/create (this client declares no sampling and no roots), and a mode it did not declare.
  const asked = Object.entries(result.inputRequests ?? {});
  if (asked.length === 0 && typeof result.requestState !== 'string') {
    return 'input_required with neither inputRequests nor requestState';
  }
  for (const [key, sent] of asked) {
    const request: unknown = sent; // as the server sent it: nothing in it is trusted yet
    if (!isObject(request) || !isObject(request.params)) return `'${key}' is not a request with params`;
    if (request.method !== 'elicitation/create') return `'${key}' asks ${String(request.method)}, which this client did not declare`;
    const mode = request.params.mode ?? 'form';
    if (typeof mode !== 'string' || !MODES.includes(mode)) return `'${key}' asks in ${String(mode)} mode, which this client did not declare`;
    if (mode === 'form' && !isObject(request.params.requestedSchema)) return `'${key}' is a form with no requestedSchema`;
  }
  return undefined;
}
// -- end of step --

// -- the loop (given) -----------------------------------------------------------------------------

// The user's choice for one question: MRTR_CHECK_CLIENT_CHOICES (set by mrtr check-client --user-choices,
// {"key": "decline", ...}) names some by key; every other question gets MRTR_USER_SAYS.
function userSays(key: string): Choice {
  let named: unknown;
  try {
    named = JSON.parse(process.env.MRTR_CHECK_CLIENT_CHOICES ?? '{}');
  } catch {
    named = {};
  }
  const said = isObject(named) ? named[key] : undefined;
  return (['accept', 'decline', 'cancel'] as const).find((c) => c === said) ?? USER_SAYS;
}

function choose(key: string, params: Record<string, unknown>): Answer {
  return params.mode === 'url' ? pageAnswer(params, userSays(key)) : formAnswer(params, userSays(key));
}

function wait(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function callOnce(client: Client, first: Params): Promise<CallToolResult> {
  let params = first;
  for (let round = 1; ; round++) {
    const result = await client.callTool(params, { allowInputRequired: true, timeout: 20000 });
    if (!isInputRequiredResult(result)) return result;
    if (round > SAFETY_NET) throw new Stopped(`the lesson's safety net stopped the call after ${SAFETY_NET} rounds`);
    const why = refusal(result);
    if (why !== undefined) throw new Refused(why);
    const answers = pickAnswers(result, choose);
    const pause = pauseBefore(round, result);
    if (pause > 0) await wait(pause);
    params = buildRetry(first, answers, carryTicket(result));
  }
}

function argumentsFor(tool: Tool): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, Property>;
  for (const [name, property] of Object.entries(properties)) if ('default' in property) args[name] = property.default;
  return args;
}

function firstLine(error: unknown): string {
  return String(error instanceof Error ? error.message : error).split('\n')[0].slice(0, 200);
}

async function main(): Promise<number> {
  const url = process.argv[process.argv.length - 1];
  const client = new Client(
    { name: 'build-the-client-ts', version: '1.0.0' },
    { capabilities: DECLARED, versionNegotiation: { mode: 'auto' }, inputRequired: { autoFulfill: false } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)), { timeout: 20000 });
  let status = 0;
  const { tools } = await client.listTools();
  for (const tool of tools) {
    try {
      const result = await callOnce(client, { name: tool.name, arguments: argumentsFor(tool) });
      const text = result.content?.find((c) => c.type === 'text');
      console.log(`${tool.name}: complete${result.isError ? ' (isError)' : ''}: ${text?.type === 'text' ? text.text : ''}`);
    } catch (error) {
      status = 1;
      const how = error instanceof Stopped ? 'stopped' : error instanceof Refused || error instanceof SdkError ? 'refused' : 'failed';
      console.log(`${tool.name}: ${how}: ${firstLine(error)}`);
    }
  }
  await client.close().catch(() => {});
  return status;
}

main().then(
  (status) => process.exit(status),
  (error: unknown) => {
    console.error(`session failed: ${firstLine(error)}`);
    process.exit(2);
  },
);
