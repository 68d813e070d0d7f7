import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Pool } from '../db/pool.ts';
import { startHttpServer, type HttpServer } from '../http/server.ts';
import { healthHandler } from '../http/health.ts';
import { metricsHandler } from '../http/metrics.ts';
import { currentSpendUsd } from '../budgets/store.ts';
import { readBudgetSpendAtScrape } from '../metrics.ts';
import type { QueueRunner } from '../queue/runner.ts';
import type { Cleanups } from './cleanups.ts';

/** The HTTP server with `/healthz` (the worker's state where this process runs one) and `/metrics`. */
export async function startHttp(
  config: Config,
  log: Logger,
  { pool, runner }: { pool: Pool; runner: QueueRunner | undefined },
  cleanups: Cleanups,
): Promise<HttpServer> {
  const http = await startHttpServer(config.HTTP_PORT, config.HTTP_HOST, log);
  cleanups.add(() => http.close());
  http.route(
    '/healthz',
    healthHandler({
      pool,
      workerRunning: runner ? () => runner.running : undefined,
      notReady: () => http.notReady(),
    }),
  );
  http.route('/metrics', metricsHandler(pool, { token: config.METRICS_TOKEN }));
  readBudgetSpendAtScrape(() => currentSpendUsd(pool));
  return http;
}
