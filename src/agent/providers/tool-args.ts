import { randomBytes } from 'node:crypto';
import type { Message, ToolCall } from '../messages.ts';

/** Parses the JSON a model streamed as a tool call's arguments; malformed JSON becomes argsError, never a crash. */
export function toolCallFromJson(id: string, name: string, json: string): ToolCall {
  const text = json.trim();
  if (!text) return { id, name, args: {} };
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      return { id, name, args: value as Record<string, unknown> };
    }
    return { id, name, args: {}, argsError: 'the arguments must be a JSON object' };
  } catch (error) {
    return { id, name, args: {}, argsError: `invalid JSON (${(error as Error).message})` };
  }
}

/** A fresh tool-call id: 16 random characters, valid for both APIs' id rules (OpenAI allows 40). */
function mintToolCallId(): string {
  return `call_${randomBytes(12).toString('base64url')}`;
}

/**
 * Gives every call of a round an id that no other call of the round, and no call earlier in the
 * conversation, has. Some OpenAI-compatible servers leave ids out, send one id twice in a round, or
 * start every round at `call_0`; the loop records tool executions by id, so a repeated id would hand
 * a call another call's recorded result without running it, and make two calls on one approval card
 * indistinguishable. Ids the server made unique are kept.
 */
export function distinctToolCallIds(calls: ToolCall[], earlier: Message[]): ToolCall[] {
  const used = new Set<string>();
  for (const m of earlier) if (m.role === 'assistant') for (const c of m.toolCalls) used.add(c.id);
  return calls.map((call) => {
    const id = call.id && !used.has(call.id) ? call.id : mintToolCallId();
    used.add(id);
    return id === call.id ? call : { ...call, id };
  });
}
