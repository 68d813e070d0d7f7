import type { Pool } from '../db/pool.ts';
import { sendJson, type RouteHandler } from './server.ts';

export interface HealthSources {
  pool: Pool;
  /** Undefined when this process runs no worker (ingress role). */
  workerRunning?: () => boolean;
}

/** GET /healthz: 200 when the database answers and the worker (if any) runs, 503 otherwise. */
export function healthHandler(sources: HealthSources): RouteHandler {
  return async (_req, res) => {
    let database: 'ok' | 'unreachable' = 'ok';
    try {
      await Promise.race([
        sources.pool.query('SELECT 1'),
        new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref()),
      ]);
    } catch {
      database = 'unreachable';
    }
    const worker = sources.workerRunning ? (sources.workerRunning() ? 'running' : 'stopped') : 'not in this process';
    const healthy = database === 'ok' && worker !== 'stopped';
    sendJson(res, healthy ? 200 : 503, { status: healthy ? 'ok' : 'unavailable', database, worker });
  };
}
