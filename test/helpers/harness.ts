import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../../src/config.ts';
import { startCountersign, type Countersign, type Role } from '../../src/app.ts';
import { ScriptedProvider, type Script } from '../../src/agent/providers/scripted.ts';
import type { Logger } from 'pino';
import { createLogger } from '../../src/log.ts';
import type { ModelProvider } from '../../src/agent/model.ts';
import type { AnyTool } from '../../src/agent/tools/tool.ts';
import { enqueueWorkItem } from '../../src/queue/turn-lifecycle.ts';
import { Priority, type WorkItem, type WorkItemDraft } from '../../src/core/work-item.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { RecordingOutbound } from './recording-outbound.ts';

export interface Harness {
  db: TestDatabase;
  app: Countersign;
  config: Config;
  outbound: RecordingOutbound;
  /** Enqueues a chat turn from a person on the test platform. */
  say(conversation: string, text: string, overrides?: Partial<WorkItemDraft>): Promise<WorkItem>;
  /** Resolves when the work item reaches a resting status. */
  settled(itemId: string, timeoutMs?: number): Promise<{ status: string; result: { text?: string } | null }>;
  stop(): Promise<void>;
}

export function testConfig(databaseUrl: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    // Each harness gets a workspace of its own, so file tools and custom skills never collide.
    AGENT_WORKSPACE_ROOT: mkdtempSync(path.join(tmpdir(), 'cs-workspace-')),
    DATABASE_URL: databaseUrl,
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    AI_PROVIDER: 'scripted',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    WORKER_POLL_INTERVAL_MS: '200',
    SHUTDOWN_GRACE_SECONDS: '1',
    ...env,
  });
}

export async function startHarness(options: {
  script?: Script;
  provider?: ModelProvider;
  env?: Record<string, string>;
  role?: Role;
  db?: TestDatabase;
  outbound?: RecordingOutbound;
  tools?: AnyTool[];
  /** Where the app logs (default: LOG_LEVEL, to stdout); a test that reads the log passes its own. */
  log?: Logger;
}): Promise<Harness> {
  const db = options.db ?? (await createTestDatabase());
  const config = testConfig(db.url, options.env);
  const outbound = options.outbound ?? new RecordingOutbound();
  const app = await startCountersign(config, {
    role: options.role ?? 'all',
    provider: options.provider ?? new ScriptedProvider(options.script),
    outbounds: [outbound],
    tools: options.tools ?? [],
    console: false,
    log: options.log ?? createLogger(config.LOG_LEVEL ?? 'silent'),
  });
  const harness: Harness = {
    db,
    app,
    config,
    outbound,
    say: (conversation, text, overrides = {}) =>
      enqueueWorkItem(app.pool, {
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: conversation,
        requester: { platform: 'test', userId: 'U1' },
        input: { prompt: text },
        payload: {},
        reply: { platform: 'test', channel: conversation },
        ...overrides,
      }),
    settled: (itemId, timeoutMs = 30_000) => waitForSettled(app, itemId, timeoutMs),
    async stop() {
      // A test ends when it sees the reply, which can be before the worker has settled the turn and
      // graphile-worker has completed its job; stopping in between strands that completion.
      await waitFor(
        async () => {
          const { rows } = await app.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE locked_at IS NOT NULL`,
          );
          return rows[0]?.n === 0 ? true : undefined;
        },
        10_000,
        'running jobs to complete before stopping',
      ).catch(() => undefined);
      await app.stop();
      if (!options.db) await db.drop();
    },
  };
  return harness;
}

export async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function waitForSettled(app: Countersign, itemId: string, timeoutMs: number) {
  return waitFor(
    async () => {
      const { rows } = await app.pool.query<{ status: string; result: { text?: string } | null }>(
        `SELECT status, result FROM countersign.work_items WHERE id = $1 AND status NOT IN ('queued', 'running')`,
        [itemId],
      );
      return rows[0];
    },
    timeoutMs,
    `work item ${itemId} to settle`,
  );
}

/**
 * Resolves once graphile-worker has no job running and none due: whatever an event set off has
 * been done. A test that checks that something did NOT happen waits for this, not for a time.
 */
export function jobsIdle(
  pool: { query: (text: string) => Promise<{ rows: Array<{ n?: number }> }> },
  timeoutMs = 30_000,
): Promise<true> {
  return waitFor(
    async () => {
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM graphile_worker._private_jobs
          WHERE locked_at IS NOT NULL OR (run_at <= now() AND attempts < max_attempts)`,
      );
      return rows[0]?.n === 0 ? true : undefined;
    },
    timeoutMs,
    'every job to be done',
  );
}

/** The status a work item comes to rest in (anything but queued or running), waiting for it. */
export function restingStatus(
  pool: { query: (text: string, values: unknown[]) => Promise<{ rows: Array<{ status?: string }> }> },
  id: string,
  timeoutMs = 30_000,
): Promise<string> {
  return waitFor(
    async () => {
      const { rows } = await pool.query(`SELECT status FROM countersign.work_items WHERE id = $1`, [id]);
      const status = rows[0]?.status;
      return status && status !== 'queued' && status !== 'running' ? status : undefined;
    },
    timeoutMs,
    `work item ${id} to settle`,
  );
}
