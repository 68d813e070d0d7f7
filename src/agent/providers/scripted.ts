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
  /** Regular expression tested against the last user message (case-insensitive). */
  match: z.string().optional(),
  rounds: z.array(ScriptedRound).min(1),
});

export const Script = z.object({ rules: z.array(ScriptedRule).min(1) });
export type Script = z.input<typeof Script>;
export type ParsedScript = z.output<typeof Script>;

/** What `AI_PROVIDER=scripted` plays when no script file is given: a small offline demo. */
export const DEMO_SCRIPT: Script = {
  rules: [
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
          text: 'I am the scripted demo model, so I can only echo: "{{lastUser}}". Set AI_PROVIDER and an API key to talk to a real model, or ask me for the time to see a tool call.',
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

/**
 * The round a script plays for this conversation: the rule matching the last user message, and the
 * round numbered by how many assistant messages follow it. Also used by the fake model servers, so
 * one script drives the scripted provider and the real SDKs alike.
 */
export function planRound(script: ParsedScript, messages: Message[]): PlannedRound {
  const start = lastUserIndex(messages);
  const lastUser = start >= 0 ? (messages[start] as { text: string }).text : '';
  const after = messages.slice(start + 1);
  const index = after.filter((m) => m.role === 'assistant').length;
  const lastTool = [...after].reverse().find((m) => m.role === 'tool');
  const lastToolResult = lastTool?.role === 'tool' ? lastTool.results.map((r) => r.content).join('\n') : '';
  const rule = script.rules.find((r) => !r.match || new RegExp(r.match, 'i').test(lastUser));
  const round = rule?.rounds[index];
  if (!round) return { text: '', chunkSize: 8, delayMs: 0, toolCalls: [] };
  return {
    text: round.text.replaceAll('{{lastUser}}', lastUser).replaceAll('{{lastToolResult}}', lastToolResult),
    chunkSize: round.chunkSize,
    delayMs: round.delayMs,
    toolCalls: round.toolCalls.map((call, i) => ({
      id: call.id ?? `call_${start + 1}_${index}_${i}`,
      name: call.name,
      json: call.rawArgs ?? JSON.stringify(call.args),
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
    const round = planRound(this.#script, request.messages);
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
