/**
 * Who runs the SQL of each table. Every table has one owner, a module or a folder of statement
 * modules (`src/queue/sql/`): its statements live there, one per function, and every other module
 * calls those functions. A few statements must name a table of
 * another owner because splitting them would cost a round trip (a CTE that writes two tables in one
 * step); each such module is listed under `sharedWith` with the reason. Checked by
 * test/architecture/sql-owners.test.ts, which also checks docs/architecture.md's table of owners.
 */

export interface TableOwner {
  /**
   * The module (path from the repository root) that runs this table's SQL, or a folder (ending in
   * `/`) whose modules hold only statements, one per function, graphile-worker's `src/sql/` way.
   */
  owner: string;
  /** Other modules whose statements name the table, each with why the statement can't live in the owner. */
  sharedWith?: Readonly<Record<string, string>>;
}

const LIFECYCLE_SQL = 'src/queue/sql/';
const LIFECYCLE_JOBS = 'src/queue/sql/jobs.ts';
const TURN_START_SQL = 'src/queue/sql/start-work-item.ts';
const BUDGETS_SQL = 'src/budgets/sql/';
const HOUSEKEEPING = 'src/queue/housekeeping-sql.ts';
const TURN_STORE = 'src/agent/turn-store.ts';
const APPROVAL_STORE = 'src/approval/store.ts';
const LIVENESS = 'src/queue/worker-liveness.ts';
const OUTBOX = 'src/reply/outbox.ts';

const RETENTION = 'retention sweep: one statement deletes old rows of several tables in one round trip';
const TURN_START = 'startWorkItem reads the checkpoint, summary and history in the statement that starts the turn';

/** Table (in schema `countersign`) → its owner. */
export const TABLE_OWNERS = {
  conversations: { owner: LIFECYCLE_SQL, sharedWith: { [HOUSEKEEPING]: RETENTION } },
  work_items: {
    owner: LIFECYCLE_SQL,
    sharedWith: { [HOUSEKEEPING]: RETENTION + ' (and finished turns’ checkpoints join their items)' },
  },
  inbound_events: { owner: LIFECYCLE_SQL, sharedWith: { [HOUSEKEEPING]: RETENTION } },
  // Written by the settle and supersede functions the lifecycle calls; read as the turn starts.
  messages: { owner: LIFECYCLE_SQL, sharedWith: { [HOUSEKEEPING]: RETENTION } },
  turn_checkpoints: { owner: TURN_STORE, sharedWith: { [TURN_START_SQL]: TURN_START, [HOUSEKEEPING]: RETENTION } },
  tool_executions: { owner: TURN_STORE, sharedWith: { [HOUSEKEEPING]: RETENTION } },
  model_rounds: { owner: TURN_STORE, sharedWith: { [HOUSEKEEPING]: RETENTION } },
  conversation_summaries: { owner: 'src/agent/history/summary-store.ts', sharedWith: { [TURN_START_SQL]: TURN_START } },
  worker_processes: {
    owner: LIVENESS,
    sharedWith: {
      [OUTBOX]:
        'claiming outbox replies whose process has no heartbeat: one statement, so a live process is never taken from',
      'src/budgets/sql/dead-process-leases.ts':
        'counting as spent the budget leases of processes with no heartbeat: one statement, so a live process’s lease is never ended',
    },
  },
  worker_slots: { owner: LIVENESS },
  rate_buckets: { owner: 'src/reply/rate-bucket.ts', sharedWith: { [HOUSEKEEPING]: RETENTION } },
  reply_outbox: { owner: OUTBOX },
  approval_envelopes: { owner: APPROVAL_STORE, sharedWith: { [HOUSEKEEPING]: RETENTION } },
  approval_audit: { owner: APPROVAL_STORE, sharedWith: { [HOUSEKEEPING]: RETENTION } },
  approval_audit_budget: { owner: APPROVAL_STORE, sharedWith: { [HOUSEKEEPING]: RETENTION } },
  grants: { owner: 'src/approval/grant-store.ts' },
  turn_feedback: { owner: 'src/audit/feedback-store.ts' },
  // Unused since migration 035 (the taint is read from the files); left for older workers, dropped later.
  workspace_changes: { owner: 'src/approval/taint-store.ts' },
  change_authors: { owner: 'src/repos/authors-store.ts' },
  workspace_baselines: { owner: 'src/approval/taint-store.ts' },
  connections: { owner: 'src/connections/store.ts' },
  oauth_clients: { owner: 'src/connections/store.ts' },
  oauth_states: { owner: 'src/connections/store.ts' },
  schedules: { owner: 'src/schedules/store.ts' },
  schedule_runs: { owner: 'src/schedules/store.ts' },
  budget_periods: { owner: BUDGETS_SQL },
  budget_reservations: { owner: BUDGETS_SQL },
  budget_allowance_offers: { owner: BUDGETS_SQL },
  schema_migrations: { owner: 'src/db/sql/schema-migrations.ts' },
} as const satisfies Record<string, TableOwner>;

/**
 * SQL functions and triggers from migrations/ that change state → the module that calls them (and
 * names them in its doc comment). A trigger is listed under the module whose writes fire it.
 */
export const SQL_FUNCTION_OWNERS = {
  enqueue_work_item: 'src/queue/sql/enqueue.ts',
  enqueue_inbound_work_item: 'src/queue/sql/enqueue.ts',
  advance_conversation: 'src/queue/sql/advance-conversation.ts',
  turn_job_priority: LIFECYCLE_JOBS,
  turn_job_flags: LIFECYCLE_JOBS,
  settle_work_item: 'src/queue/sql/settle-work-item.ts',
  supersede_if_followed_up: 'src/queue/sql/supersede-if-followed-up.ts',
  supersede_parked_turns: 'src/queue/sql/enqueue.ts',
  supersede_pending_cards: 'src/queue/sql/enqueue.ts',
} as const satisfies Record<string, string>;

/** graphile-worker's own schema: the modules that call its functions or read its tables directly. */
export const GRAPHILE_WORKER_OWNERS: Readonly<Record<string, string>> = {
  [LIFECYCLE_JOBS]:
    'graphile_worker.add_job: a job is added in the statement (or transaction) that makes its work item',
  [LIVENESS]: 'graphile_worker.jobs and force_unlock_workers: freeing a dead worker’s jobs, and the waiting-jobs gauge',
  [HOUSEKEEPING]: 'graphile_worker._private_job_queues: dropping named queues no job uses',
};

/** Modules that run SQL naming no table of the app, and why. */
export const SQL_WITHOUT_TABLES: Readonly<Record<string, string>> = {
  'src/db/pool.ts': 'transactions: BEGIN, COMMIT, ROLLBACK',
  'src/db/embedded.ts': 'creates the database on the embedded server (pg_database), sets its password',
  'src/db/errors.ts': 'waits for the database with SELECT 1',
  'src/db/first-connection.ts': 'a starting process waits for the database with SELECT 1',
  'src/db/advisory-locks.ts': 'session-level advisory locks, keyed by the caller',
  'src/http/health.ts': '/healthz: SELECT 1',
  'src/queue/poisoned-pool.ts': 'probes a connection with SELECT 1',
  'src/queue/stop-requests.ts':
    'listens on the stop channel (the requests themselves are in src/queue/sql/stop-requests.ts)',
};
