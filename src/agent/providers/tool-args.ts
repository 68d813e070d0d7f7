import type { ToolCall } from '../messages.ts';

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
