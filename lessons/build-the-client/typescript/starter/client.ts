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
  // TODO: start from `first` (same tool, same arguments, same _meta: copy them, never rebuild them); add
  // inputResponses only when there are answers and requestState only when there is a ticket, the ticket
  // exactly as the server wrote it. (The SDK gives every request a new JSON-RPC id.)
  void answers, ticket;
  return { name: first.name }; // a fresh call that forgets everything
}
// -- end of step --

// -- step: answers --
function valueFor(property: Property): string | number | boolean {
  // What the user's answer to one field is, typed by the field's schema.
  // TODO: the field's default when it has one; else an enum's first value; true for a boolean; for an
  // integer or number, a value within minimum and maximum; a string otherwise.
  void property;
  return 'yes'; // "yes" whatever the field's type
}

function pickAnswers(result: InputRequiredResult, choose: (key: string, params: Record<string, unknown>) => Answer):
    Record<string, Answer> | undefined {
  // Step 2: answer exactly the keys this result asks, and nothing from an earlier round.
  // TODO: for each key of result.inputRequests, choose(key, its params). A round with no questions (only a
  // ticket) has no answers at all: return undefined, so the retry carries no inputResponses.
  void result, choose;
  return {}; // answers nothing
}

function formAnswer(params: Record<string, unknown>, said: Choice): Answer {
  // The user's choice, and on accept a value for every field of the form.
  // TODO: when the user `said` is not accept, pass the choice on with no content; on accept, content holds
  // valueFor(...) of every property of params.requestedSchema.
  void params, said;
  return { action: 'accept', content: {} }; // accepts an empty form
}
// -- end of step --

// -- step: carry --
function carryTicket(result: InputRequiredResult): string | undefined {
  // Step 3: the ticket to send back is this result's own, the newest, exactly as it came.
  // TODO: result.requestState, untouched, when it is a string; undefined when the result has none (never an
  // older one, never one made up).
  void result;
  return undefined; // carries no ticket
}
// -- end of step --

// -- step: rounds --
const MAX_ROUNDS = 10;
const FIRST_PAUSE_MS = 100;
const LONGEST_PAUSE_MS = 1000;

function pauseBefore(round: number, result: InputRequiredResult): number {
  // Step 4: how long to wait before retry number `round` (1, 2, ...), or throw Stopped to give up.
  // TODO: past MAX_ROUNDS retries, throw new Stopped(...) saying the server still asked. A round that asks
  // nothing (only a ticket) waits FIRST_PAUSE_MS, doubling each round up to LONGEST_PAUSE_MS; a round with
  // questions waited for the user already (0).
  void round, result, MAX_ROUNDS, FIRST_PAUSE_MS, LONGEST_PAUSE_MS;
  return 0; // retries at once, for ever
}
// -- end of step --

// -- step: url --
function pageAnswer(params: Record<string, unknown>, said: Choice): Answer {
  // Step 5: a URL-mode question: the user is shown the page and chooses.
  // TODO: accept means the user consents to go there: an action and no content (there is no form to fill);
  // decline and cancel go back as the user chose them (`said`).
  void params, said;
  return { action: 'accept', content: {} }; // answers it like a form
}
// -- end of step --

// -- step: refuse --
function refusal(result: InputRequiredResult): string | undefined {
  // Step 6: why this input_required cannot be acted on, or undefined when it can.
  // (The SDK itself refuses an unknown resultType and an input_required with neither member.)
  // TODO: refuse a result that asks nothing and carries no ticket; a request that is not an object with
  // params; any method other than elicitation/create (this client declares no sampling and no roots); a mode
  // not in MODES (no mode means form); a form with no requestedSchema.
  void result;
  return undefined; // acts on everything
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
