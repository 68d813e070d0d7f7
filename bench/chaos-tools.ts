import { appendFileSync, openSync, closeSync, fsyncSync } from 'node:fs';
import { z } from 'zod';
import { defineTool } from '../src/agent/tools/tool.ts';
import type { Script } from '../src/agent/providers/scripted.ts';

/**
 * The chaos run's tools. `chaos_effect` changes the world (it appends the conversation to a file,
 * synced to disk) and needs approval, so "ran once", "never ran twice" and "never ran unapproved"
 * are read off the file, independently of Countersign's own bookkeeping.
 */
export function chaosTools(effectsFile: string) {
  return [
    defineTool({
      name: 'chaos_read',
      description: 'Reads something harmless.',
      version: '1',
      input: z.object({}),
      approval: 'never',
      risk: 'low',
      idempotent: true,
      execute: async () => 'read-ok',
    }),
    defineTool({
      name: 'chaos_effect',
      description: 'Changes the world once.',
      version: '1',
      input: z.object({}),
      approval: 'always',
      risk: 'medium',
      idempotent: false,
      async execute(_args, ctx) {
        const fd = openSync(effectsFile, 'a');
        try {
          appendFileSync(fd, `${ctx.conversationId}\n`);
          fsyncSync(fd);
        } finally {
          closeSync(fd);
        }
        return 'effect-done';
      },
    }),
  ];
}

/** What the ingress outage's Slack mentions ask (chaos-ingress.ts); answered `Taken: <prompt>`, no tools. */
export const INGRESS_PROMPT = 'ingress-probe';

export const CHAOS_SCRIPT: Script = {
  rules: [
    { match: `\\b${INGRESS_PROMPT}\\b`, rounds: [{ text: 'Taken: {{lastUser}}' }] },
    {
      rounds: [
        {
          text: 'Working. ',
          toolCalls: [
            { name: 'chaos_read', args: {} },
            { name: 'chaos_effect', args: {} },
          ],
        },
        { text: 'Result: {{lastToolResult}} END', chunkSize: 4, delayMs: 40 },
      ],
    },
  ],
};
