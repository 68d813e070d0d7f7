import type { Pool } from '../db/pool.ts';
import { metrics, registry } from '../metrics.ts';
import { countWaitingJobs, countWorkerProcesses } from '../queue/worker-liveness.ts';
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
      const waiting = await countWaitingJobs(pool);
      metrics.jobsWaiting.reset();
      for (const row of waiting) metrics.jobsWaiting.set({ priority: String(row.priority) }, row.n);
      metrics.workersAlive.set(await countWorkerProcesses(pool));
    } catch {
      // The database is down: serve the process's own metrics anyway; /healthz reports the outage.
    }
    const body = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType });
    res.end(body);
  };
}
