import { z } from 'zod';
import { defineBuiltinTool } from './tool.ts';

/** A harmless builtin so every deployment exercises the loop's tool path end to end. */
export const currentTimeTool = defineBuiltinTool({
  name: 'current_time',
  kind: 'read',
  description: 'Returns the current date and time, in UTC and optionally in an IANA time zone.',
  version: '1',
  input: z.object({
    timeZone: z.string().max(64).optional().describe('IANA time zone, e.g. Europe/Berlin'),
  }),
  approval: 'never',
  risk: 'low',
  idempotent: true,
  async execute({ timeZone }) {
    const now = new Date();
    if (!timeZone) return `UTC: ${now.toISOString()}`;
    try {
      const local = new Intl.DateTimeFormat('en-GB', { dateStyle: 'full', timeStyle: 'long', timeZone }).format(now);
      return `UTC: ${now.toISOString()}\n${timeZone}: ${local}`;
    } catch {
      return { content: `Unknown time zone "${timeZone}". Use an IANA name such as Europe/Berlin.`, isError: true };
    }
  },
});
