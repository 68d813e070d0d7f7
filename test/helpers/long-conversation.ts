import { z } from 'zod';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { defineTool } from '../../src/agent/tools/tool.ts';

/**
 * A chat-ops conversation that grows the way real ones do: each turn looks something up with one or
 * two tool calls (results of a few hundred tokens) before answering, so a turn is two or three model
 * rounds. Used by the prompt-cache test and by benchmark P8.
 */
export function lookupTool(resultChars = 2400) {
  return defineTool({
    name: 'lookup',
    description: 'Looks up a service, host or deploy in the inventory and returns what is known about it.',
    version: '1',
    input: z.object({ query: z.string().describe('What to look up') }),
    approval: 'never',
    risk: 'low',
    idempotent: true,
    async execute({ query }) {
      const line = `${query}: status ok, owner team-sre, region eu-west-1, last deploy r-${query.length}42; `;
      return line.repeat(Math.ceil(resultChars / line.length)).slice(0, resultChars);
    },
  });
}

/** Turns that say "quick" take one lookup (two rounds); the others take two (three rounds). */
export const LONG_CONVERSATION_SCRIPT: Script = {
  rules: [
    {
      match: 'quick',
      rounds: [
        { text: 'Let me check.', toolCalls: [{ name: 'lookup', args: { query: 'billing-api' } }] },
        { text: 'Billing is fine: {{lastToolResult}}' },
      ],
    },
    {
      rounds: [
        { text: 'Checking the service first.', toolCalls: [{ name: 'lookup', args: { query: 'payments-api' } }] },
        { toolCalls: [{ name: 'lookup', args: { query: 'payments-db' } }] },
        { text: 'Both look healthy. Summary for you: payments-api and payments-db are up, no action needed.' },
      ],
    },
  ],
};

/** The person's message for turn `n` (1-based): every third turn is a quick one. */
export function turnMessage(n: number): string {
  return n % 3 === 0
    ? `quick: is billing ok after change CHG-${1000 + n}?`
    : `turn ${n}: check payments after deploy r-${n}00 and tell me whether ticket OPS-${2000 + n} can close`;
}
