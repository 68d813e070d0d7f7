import { z } from 'zod';
import { defineTool, type ToolContext } from '../../src/agent/tools/tool.ts';
import { createLogger } from '../../src/log.ts';

/**
 * A risky tool whose every run is appended to `runs`, so "ran once", "never ran twice" and "never
 * ran unapproved" are observable, independently of Countersign's own records.
 */
export function countingTool(
  name: string,
  runs: string[],
  options: { risk?: 'low' | 'medium' | 'high'; result?: string } = {},
) {
  return defineTool({
    name,
    description: `${name} (a test tool that counts its runs)`,
    version: '1',
    input: z.object({ service: z.string() }),
    approval: 'always',
    risk: options.risk ?? 'high',
    idempotent: false,
    async execute({ service }) {
      runs.push(service);
      return `${options.result ?? 'done'} ${service}`;
    },
  });
}

/** The context a tool gets from the loop, for calling tools directly in tests. */
export function testToolContext(overrides: Partial<ToolContext> = {}): ToolContext {
  return {
    workItemId: 'w',
    conversationId: 'c',
    requester: { platform: 'test', userId: 'U1' },
    signal: new AbortController().signal,
    log: createLogger('silent'),
    ...overrides,
  };
}

/**
 * A tool that needs no approval and takes `ms` to run (stoppable): for tests of what happens while
 * a tool runs. Its argument is `service` (or `target`, as `arg` says); every run is pushed to `runs`.
 */
export function slowTool(name: string, runs: string[], options: { ms?: number; arg?: 'service' | 'target' } = {}) {
  const arg = options.arg ?? 'service';
  return defineTool({
    name,
    description: `${name} (a slow test tool)`,
    version: '1',
    input: z.object({ [arg]: z.string() }) as z.ZodType<Record<string, string>>,
    approval: 'never',
    risk: 'low',
    idempotent: false,
    async execute(args, { signal }) {
      const subject = args[arg]!;
      runs.push(subject);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, options.ms ?? 1500);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)));
      });
      return `${subject} is fine`;
    },
  });
}
