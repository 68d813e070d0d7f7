import type { Pool } from '../db/pool.ts';
import { metrics, registry } from '../metrics.ts';
import { checkMetricsAccess } from './metrics-access.ts';
import { sendJson, type RouteHandler } from './server.ts';

export interface MetricsOptions {
  /** METRICS_TOKEN: required as a bearer token when set; unset, only loopback clients are answered. */
  token?: string;
}

/** GET /metrics: Prometheus text. Shared gauges are refreshed from Postgres on each scrape. */
export function metricsHandler(pool: Pool, options: MetricsOptions = {}): RouteHandler {
  return async (req, res) => {
    const access = checkMetricsAccess(req, options.token);
    if (!access.allowed) {
      if (access.status === 401) res.setHeader('www-authenticate', 'Bearer realm="metrics"');
      return sendJson(res, access.status, { error: access.error });
    }
    try {
      const waiting = await pool.query<{ priority: number; n: number }>(
        `SELECT priority, count(*)::int AS n FROM graphile_worker.jobs
         WHERE locked_at IS NULL AND run_at <= now() AND attempts < max_attempts GROUP BY priority`,
      );
      metrics.jobsWaiting.reset();
      for (const row of waiting.rows) metrics.jobsWaiting.set({ priority: String(row.priority) }, row.n);
      const alive = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM countersign.worker_processes`);
      metrics.workersAlive.set(alive.rows[0]?.n ?? 0);
    } catch {
      // The database is down: serve the process's own metrics anyway; /healthz reports the outage.
    }
    const body = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType });
    res.end(body);
  };
}
