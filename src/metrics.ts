import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Process-wide Prometheus metrics. Every process (ingress or worker) exposes its own at GET /metrics;
 * Prometheus sums across processes. Gauges that describe shared state (jobs waiting, live workers)
 * are read from Postgres at scrape time, so any one process's scrape is the truth.
 */
export const registry = new Registry();
// Unprefixed on purpose: `process_cpu_seconds_total`, `nodejs_heap_size_used_bytes` and the rest are
// the names every Node.js dashboard and alert expects. Countersign's own metrics carry `countersign_`.
collectDefaultMetrics({ register: registry });

const LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

/** Where `countersign_budget_spent_usd` is read at each scrape (src/wiring/http.ts sets it). */
let budgetSpend: (() => Promise<Array<{ budget: string; usd: number }>>) | undefined;

/** Reads the budgets' spend from `source` (Postgres) whenever /metrics is scraped. */
export function readBudgetSpendAtScrape(source: () => Promise<Array<{ budget: string; usd: number }>>): void {
  budgetSpend = source;
}

export const metrics = {
  turnDuration: new Histogram({
    name: 'countersign_turn_duration_seconds',
    help: 'Time from a work item being enqueued to reaching a resting point (done, failed, awaiting approval).',
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  firstVisibleText: new Histogram({
    name: 'countersign_first_visible_text_seconds',
    help: 'Time from a work item being enqueued to the first reply text visible on the platform.',
    labelNames: ['platform'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  feedback: new Counter({
    name: 'countersign_feedback_total',
    help:
      'Votes on final answers that took effect (👍 up, 👎 down), by platform: one per person and answer; ' +
      'votes standing now = this − countersign_feedback_withdrawn_total.',
    labelNames: ['platform', 'vote'] as const,
    registers: [registry],
  }),
  modelRounds: new Counter({
    name: 'countersign_model_rounds_total',
    help: 'Model rounds completed, by the provider that answered.',
    labelNames: ['provider'] as const,
    registers: [registry],
  }),
  modelRetries: new Counter({
    name: 'countersign_model_retries_total',
    help: 'Model round retries after 429, overload, 5xx or a dropped connection.',
    labelNames: ['provider', 'reason'] as const,
    registers: [registry],
  }),
  modelFallbacks: new Counter({
    name: 'countersign_model_fallbacks_total',
    help: 'Rounds answered by a fallback provider because the previous one was unavailable.',
    labelNames: ['from'] as const,
    registers: [registry],
  }),
  tokens: new Counter({
    name: 'countersign_model_tokens_total',
    help: 'Model tokens by kind (input, output, cache_read, cache_write).',
    labelNames: ['provider', 'kind'] as const,
    registers: [registry],
  }),
  toolCalls: new Counter({
    name: 'countersign_tool_calls_total',
    help: 'Tool calls executed, by tool and outcome (ok, error).',
    labelNames: ['tool', 'outcome'] as const,
    registers: [registry],
  }),
  approvals: new Counter({
    name: 'countersign_approvals_total',
    help: 'Approval events by outcome (requested, consumed, rejected, expired, refused, executed, denied, answered).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  platformRateLimited: new Counter({
    name: 'countersign_platform_rate_limited_total',
    help: 'HTTP 429 answers from chat platforms.',
    labelNames: ['platform', 'method'] as const,
    registers: [registry],
  }),
  platformErrors: new Counter({
    name: 'countersign_platform_errors_total',
    help: 'Failed chat platform API calls (retried), by platform.',
    labelNames: ['platform'] as const,
    registers: [registry],
  }),
  historyCompactions: new Counter({
    name: 'countersign_history_compactions_total',
    help: 'Times older turns of a conversation were folded into its stored summary (AGENT_HISTORY_TOKENS).',
    registers: [registry],
  }),
  turnsStopped: new Counter({
    name: 'countersign_turns_stopped_total',
    help: 'Turns a person stopped with the Stop button or Ctrl-C.',
    registers: [registry],
  }),
  budgetSpentUsd: new Gauge({
    name: 'countersign_budget_spent_usd',
    help: 'Dollars settled against each USD budget in its current period (read from Postgres at scrape).',
    labelNames: ['budget'] as const,
    registers: [registry],
    // Every process spends against the same budgets: what one settled is only known to Postgres.
    async collect() {
      if (!budgetSpend) return;
      try {
        const spent = await budgetSpend();
        this.reset();
        for (const { budget, usd } of spent) this.set({ budget }, usd);
      } catch {
        // The database is down: the last figures stand; /healthz reports the outage.
      }
    },
  }),
  budgetRefusals: new Counter({
    name: 'countersign_budget_refusals_total',
    help: 'Model calls refused because a budget had no room left (the turn ended with the refusal), by budget.',
    labelNames: ['budget'] as const,
    registers: [registry],
  }),
  heartbeat: new Gauge({
    name: 'countersign_worker_heartbeat_timestamp_seconds',
    help: "Unix time of this process's last successful worker heartbeat.",
    registers: [registry],
  }),
  jobsWaiting: new Gauge({
    name: 'countersign_jobs_waiting',
    help: 'Jobs ready to run and not yet taken, by priority class (read from Postgres at scrape).',
    labelNames: ['priority'] as const,
    registers: [registry],
  }),
  workersAlive: new Gauge({
    name: 'countersign_workers_alive',
    help: 'Worker processes with a fresh heartbeat (read from Postgres at scrape).',
    registers: [registry],
  }),
};
