import type { Pool } from '../db/pool.ts';
import { sendJson, type RouteHandler } from './server.ts';

export interface HealthSources {
  pool: Pool;
  /** Undefined when this process runs no worker (ingress role). */
  workerRunning?: () => boolean;
  /** What this process is still waiting for (a platform connecting); anything listed: not ready. */
  notReady?: () => string[];
}

/**
 * GET /healthz: 200 when the database answers, the worker (if any) runs and every platform this
 * process listens on is connected; 503 otherwise. The body is
 * the status alone: probes need nothing more, and the listener is open to anyone who can reach it, so
 * it does not say which part failed or what role this process has (the log does).
 */
export function healthHandler(sources: HealthSources): RouteHandler {
  return async (_req, res) => {
    let databaseAnswers = true;
    try {
      await Promise.race([
        sources.pool.query('SELECT 1'),
        new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref()),
      ]);
    } catch {
      databaseAnswers = false;
    }
    const healthy = databaseAnswers && (sources.workerRunning?.() ?? true) && (sources.notReady?.().length ?? 0) === 0;
    sendJson(res, healthy ? 200 : 503, { status: healthy ? 'ok' : 'unavailable' });
  };
}
