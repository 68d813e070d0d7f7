import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Message } from '../messages.ts';
import { ZERO_USAGE, type ModelProvider, type ModelRequest, type ModelRound, type RoundCallbacks } from '../model.ts';
import { toolCallFromJson } from './tool-args.ts';
import { abortableSleep as sleep } from './retry.ts';

/**
 * A model that plays a script: for tests, benchmarks and offline demos. It is stateless — the round
 * to play is derived from the conversation (how many assistant messages follow the last user
 * message) — so a turn resumed on another worker continues the script where it left off.
 */
const ScriptedToolCall = z.object({
  id: z.string().optional(),
  name: z.string(),
  args: z.record(z.string(), z.unknown()).default({}),
  /** Sent verbatim instead of `args`, to exercise malformed JSON from a model. */
  rawArgs: z.string().optional(),
});

const ScriptedRound = z.object({
  /** Text to stream; `{{lastUser}}` and `{{lastToolResult}}` are filled in. */
  text: z.string().default(''),
  /** How many characters each streamed chunk carries. */
  chunkSize: z.number().int().positive().default(8),
  /** Pause before each chunk, in milliseconds. */
  delayMs: z.number().int().nonnegative().default(0),
  toolCalls: z.array(ScriptedToolCall).default([]),
  /** Throw this message instead of answering (a failing provider). */
  error: z.string().optional(),
});

const ScriptedRule = z.object({
  /**
   * Regular expression tested against the last user message (case-insensitive). Its named groups
   * fill `{{name}}` in the rounds' text and in their tool calls' string arguments; an argument that
   * is exactly `{{words:name}}` becomes the group's whitespace-separated words, as a list (an argv).
   */
  match: z.string().optional(),
  /** The rule applies only when the request offers this tool (one that a setting may switch off). */
  tool: z.string().optional(),
  rounds: z.array(ScriptedRound).min(1),
});

export const Script = z.object({ rules: z.array(ScriptedRule).min(1) });
export type Script = z.input<typeof Script>;
export type ParsedScript = z.output<typeof Script>;

/** "run ls -la": the demo's request to run a program. */
const RUN_REQUEST = String.raw`^\s*(?:please\s+)?run\s+(?<command>.+)$`;

/** What `AI_PROVIDER=scripted` plays when no script file is given: a small offline demo. */
export const DEMO_SCRIPT: Script = {
  rules: [
    {
      // "write notes.txt: hi", "create a file notes.txt with hi": an approval card on first contact.
      match: String.raw`^\s*(?:please\s+)?(?:write|create)\s+(?:(?:a|the)\s+)?(?:(?:new\s+)?file\s+)?(?:(?:called|named)\s+)?(?<path>[\w./-]+)(?:\s*:\s*|\s+(?:with|containing)\s+(?:(?:the\s+)?(?:text|content)\s+)?)(?<content>.+)$`,
      rounds: [
        {
          text: 'Writing a file needs your approval first.',
          toolCalls: [{ name: 'write_file', args: { path: '{{path}}', content: '{{content}}\n' } }],
        },
        { text: 'Result: {{lastToolResult}}', delayMs: 15 },
      ],
    },
    {
      match: RUN_REQUEST,
      tool: 'run_command',
      rounds: [
        {
          text: 'Running a program needs your approval first.',
          toolCalls: [{ name: 'run_command', args: { command: '{{words:command}}' } }],
        },
        { text: 'Result: {{lastToolResult}}', delayMs: 15 },
      ],
    },
    {
      match: RUN_REQUEST,
      rounds: [
        {
          text: 'Running programs is switched off, so I cannot run `{{command}}`. Start Countersign with ENABLE_RUN_COMMAND=true to let me ask you to approve a run.',
          delayMs: 15,
        },
      ],
    },
    {
      match: '\\b(time|date|clock)\\b',
      rounds: [
        { text: 'Let me check the clock. ', toolCalls: [{ name: 'current_time', args: {} }] },
        { text: 'The current time is {{lastToolResult}}.', delayMs: 15 },
      ],
    },
    {
      match: '\\b(deploy|approve|approval)\\b',
      rounds: [
        {
          text: 'This needs a human decision first.',
          toolCalls: [
            {
              name: 'request_human_approval',
              args: { question: 'Deploy the demo service to production?', options: ['Yes, deploy', 'No, cancel'] },
            },
          ],
        },
        { text: '{{lastToolResult}}. (The scripted demo model does not deploy anything for real.)', delayMs: 15 },
      ],
    },
    {
      rounds: [
        {
          text: 'I am the scripted demo model, so I can only echo: "{{lastUser}}". Set AI_PROVIDER and an API key to talk to a real model. Offline, try "what time is it?" for a tool call, or "write notes.txt: hi" to see an approval card.',
          delayMs: 15,
        },
      ],
    },
  ],
};

export function loadScript(file: string): ParsedScript {
  const raw: unknown = JSON.parse(readFileSync(file, 'utf8'));
  const parsed = Script.safeParse(raw);
  if (!parsed.success)
    throw new Error(`SCRIPTED_MODEL_SCRIPT ${file} is not a valid script: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

function lastUserIndex(messages: Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]?.role === 'user') return i;
  return -1;
}

/** One round of a script, decided from the conversation alone. */
export interface PlannedRound {
  text: string;
  chunkSize: number;
  delayMs: number;
  /** Tool calls with their arguments as the JSON text a model would stream. */
  toolCalls: Array<{ id: string; name: string; json: string }>;
  error?: string;
}

/** Fills `{{name}}` placeholders; names without a value stay as written. */
function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (placeholder, name: string) => values[name] ?? placeholder);
}

const WORDS = /^\{\{words:(\w+)\}\}$/;

/** A tool call's arguments with the match's named groups filled in (see ScriptedRule.match). */
function fillArgs(value: unknown, groups: Record<string, string>): unknown {
  if (typeof value === 'string') {
    const words = WORDS.exec(value)?.[1];
    if (words !== undefined) return (groups[words] ?? '').split(/\s+/).filter(Boolean);
    return fill(value, groups);
  }
  if (Array.isArray(value)) return value.map((item) => fillArgs(item, groups));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, fillArgs(item, groups)]));
  }
  return value;
}

/** The first rule for this message and these tools, with its match's named groups. */
function matchRule(
  script: ParsedScript,
  lastUser: string,
  offeredTools: readonly string[],
): { rule: ParsedScript['rules'][number]; groups: Record<string, string> } | undefined {
  for (const rule of script.rules) {
    if (rule.tool !== undefined && !offeredTools.includes(rule.tool)) continue;
    if (rule.match === undefined) return { rule, groups: {} };
    const found = new RegExp(rule.match, 'i').exec(lastUser);
    if (found) return { rule, groups: { ...found.groups } };
  }
  return undefined;
}

/**
 * The round a script plays for this conversation: the first rule that matches the last user
 * message (and whose tool, if it names one, is among `offeredTools`), and the round numbered by how
 * many assistant messages follow that message. Also used by the fake model servers, so one script
 * drives the scripted provider and the real SDKs alike.
 */
export function planRound(
  script: ParsedScript,
  messages: Message[],
  offeredTools: readonly string[] = [],
): PlannedRound {
  const start = lastUserIndex(messages);
  const lastUser = start >= 0 ? (messages[start] as { text: string }).text : '';
  const after = messages.slice(start + 1);
  const index = after.filter((m) => m.role === 'assistant').length;
  const lastTool = [...after].reverse().find((m) => m.role === 'tool');
  const lastToolResult = lastTool?.role === 'tool' ? lastTool.results.map((r) => r.content).join('\n') : '';
  const { rule, groups } = matchRule(script, lastUser, offeredTools) ?? { groups: {} };
  const round = rule?.rounds[index];
  if (!round) return { text: '', chunkSize: 8, delayMs: 0, toolCalls: [] };
  return {
    text: fill(round.text, { ...groups, lastUser, lastToolResult }),
    chunkSize: round.chunkSize,
    delayMs: round.delayMs,
    toolCalls: round.toolCalls.map((call, i) => ({
      id: call.id ?? `call_${start + 1}_${index}_${i}`,
      name: call.name,
      json: call.rawArgs ?? JSON.stringify(fillArgs(call.args, groups)),
    })),
    ...(round.error ? { error: round.error } : {}),
  };
}

export function parseScript(script: Script): ParsedScript {
  return Script.parse(script);
}

export class ScriptedProvider implements ModelProvider {
  readonly name = 'scripted';
  readonly model = 'script';
  readonly #script: ParsedScript;

  constructor(script: Script = DEMO_SCRIPT) {
    this.#script = Script.parse(script);
  }

  async streamRound(request: ModelRequest, callbacks: RoundCallbacks, signal: AbortSignal): Promise<ModelRound> {
    const round = planRound(
      this.#script,
      request.messages,
      request.tools.map((tool) => tool.name),
    );
    if (round.error) throw new Error(round.error);
    const { text } = round;
    for (let i = 0; i < text.length; i += round.chunkSize) {
      if (round.delayMs > 0) await sleep(round.delayMs, signal);
      else if (signal.aborted) throw signal.reason as Error;
      callbacks.onText(text.slice(i, i + round.chunkSize));
    }
    const toolCalls = round.toolCalls.map((c) => toolCallFromJson(c.id, c.name, c.json));
    return {
      text,
      toolCalls,
      stopReason: toolCalls.length > 0 ? 'tool_use' : 'end_turn',
      usage: { ...ZERO_USAGE, outputTokens: Math.ceil(text.length / 4) },
      provider: this.name,
      model: this.model,
      fallbacks: [],
    };
  }
}
