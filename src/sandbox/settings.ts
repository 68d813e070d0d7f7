import { z } from 'zod';
import { list } from '../core/env-fields.ts';

/** The programs a sandbox may let onto the network, by what starts them (SANDBOX_NETWORK). */
const NETWORK_USERS = ['run_command', 'coding_agent', 'mcp'] as const;
export type NetworkUser = (typeof NETWORK_USERS)[number];

/** The sandbox's variables, spread into src/config.ts's schema (docs/sandbox.md). */
export const SANDBOX_ENV = {
  /**
   * auto: every program the bot starts runs in bubblewrap where it can; where it cannot, start-up
   * says so and programs are refused. on: the same, but start-up fails without a sandbox. off: no
   * sandbox at all (programs run as the bot itself: docs/sandbox.md says what that trusts).
   */
  SANDBOX: z.enum(['auto', 'on', 'off'], { error: 'expected auto, on or off' }).default('auto'),
  /** Which programs reach the network: run_command, coding_agent, mcp (every stdio MCP server); none by default. */
  SANDBOX_NETWORK: list
    .pipe(z.array(z.enum(NETWORK_USERS, { error: `expected a list of ${NETWORK_USERS.join(', ')}` })))
    .default([]),
  /** Absolute paths every sandboxed program may read (where a coding CLI is installed, a toolchain). */
  SANDBOX_READ_PATHS: list
    .pipe(z.array(z.string().startsWith('/', 'expected absolute paths, comma-separated')))
    .default([]),
};

export type SandboxMode = 'auto' | 'on' | 'off';
