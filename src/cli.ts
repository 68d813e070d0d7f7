import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { bool } from './core/env-fields.ts';
import { COMMANDS, USAGE, asksHelp, commandHelp, invocationProblem } from './cli-invocation.ts';
import { userInfo } from 'node:os';
import { ConfigError, INSTALL_DIR, describeConfig, loadConfig, type Config } from './config.ts';
import { createLogger } from './log.ts';
import { startTelemetry } from './telemetry/sdk.ts';
import { checkRole, startCountersign, type Role } from './app.ts';
import { migrate } from './db/migrate.ts';
import { startEmbeddedPostgres } from './db/embedded.ts';
import { runningEmbeddedUrl } from './db/running-cluster.ts';
import { resolveFromCwd } from './app.ts';
import { skillsCommand } from './skills/index.ts';
import { createPool } from './db/pool.ts';
import { formatUsage, usageSummary } from './usage/summary.ts';
import { loadPriceTable, type PriceTable } from './usage/model-prices.ts';
import { formatPolicyProblem, loadPolicyFile, policyCommand } from './policy/index.ts';
import { budgetUse, formatBudgetUse } from './budgets/view.ts';
import { platformDirectory } from './adapters/registry.ts';
import { registeredToolKinds } from './wiring/tools.ts';
import { AuditFilter, readAuditLog } from './audit/audit-log.ts';
import { listLiveGrants } from './approval/grant-store.ts';
import { operatorStatusText } from './queue/work-status.ts';
import { deleteConnection, listConnections } from './connections/store.ts';
import { audit, pendingMergeCard } from './approval/store.ts';
import { schedulesCommand } from './schedules/cli.ts';
import { recordScheduleEvent } from './wiring/schedules.ts';
import type { Grant } from './approval/grants.ts';
import { worktreesCli } from './repos/worktrees-command.ts';
import { describeGrant, revoke as revokeGrant } from './approval/grant-verbs.ts';

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

async function start(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { role: { type: 'string', default: 'all' } } });
  const role = values.role as Role;
  if (!['all', 'ingress', 'worker'].includes(role)) {
    process.stderr.write(`--role must be all, ingress or worker (got "${role}")\n`);
    return 2;
  }
  const config = configOrExit();
  checkRole(config, role);
  // Before anything runs, so the first span has somewhere to go; nothing is loaded without an endpoint.
  const telemetry = await startTelemetry();
  const app = await startCountersign(config, { role });
  const stop = async () => {
    await app.stop();
    // After the app: the spans of its last turns are sent before the process leaves.
    await telemetry
      ?.shutdown()
      .catch((error: unknown) => app.log.warn({ err: error }, 'could not send the last spans'));
  };
  // A library promise rejected while the database is away must not take the whole process down:
  // turns are durable and resume, so log it loudly and keep serving.
  process.on('unhandledRejection', (reason) => app.log.error({ err: reason }, 'unhandled promise rejection'));
  let exiting = false;
  const shutdown = async (signal: string) => {
    if (exiting) return;
    exiting = true;
    app.log.info({ signal }, 'shutting down');
    await stop();
    // process.exitCode may say why a run ended badly (the console's input ended at an undecided card).
    process.exit();
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  // A closed terminal: stop cleanly too, or an embedded Postgres would outlive us.
  process.on('SIGHUP', () => void shutdown('SIGHUP'));
  // Worker pools that died cannot take jobs: leave (releasing our locks) so a supervisor restarts us.
  void app.failed.then(async (error) => {
    app.log.fatal({ err: error }, 'the worker stopped working; exiting so it can be restarted');
    // A stop that hangs would keep the heartbeat going while nothing runs the jobs this process
    // still holds: leave by the deadline, and the stale heartbeat hands them to a live worker.
    const deadlineMs = (config.SHUTDOWN_GRACE_SECONDS + 15) * 1000;
    const stopped = await Promise.race([
      stop().then(() => true),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), deadlineMs).unref()),
    ]);
    if (!stopped) app.log.error({ deadlineMs }, 'stopping did not finish in time; exiting anyway');
    process.exit(1);
  });
  if (app.terminalDone) {
    await app.terminalDone;
    await shutdown('console input ended');
  }
  return 0;
}

async function runMigrate(): Promise<number> {
  const config = configOrExit();
  const log = createLogger(config.LOG_LEVEL ?? 'info');
  return withDatabase(async (url) => {
    const { applied } = await migrate(url, log);
    process.stdout.write(applied.length ? `Applied ${applied.join(', ')}\n` : 'Database is up to date\n');
    return 0;
  });
}

/**
 * Runs `fn` against the configured database: DATABASE_URL; else the embedded cluster a running
 * `npm start` serves from EMBEDDED_POSTGRES_DIR (the operator's commands run beside the bot); else
 * that cluster, started for this command and stopped after it.
 */
async function withDatabase<T>(fn: (url: string) => Promise<T>): Promise<T> {
  const config = configOrExit();
  if (config.DATABASE_URL) return fn(config.DATABASE_URL);
  const dir = resolveFromCwd(config.EMBEDDED_POSTGRES_DIR);
  const running = await runningEmbeddedUrl(dir);
  if (running) return fn(running);
  const log = createLogger(config.LOG_LEVEL ?? 'warn');
  const db = await startEmbeddedPostgres({ dir, log });
  try {
    return await fn(db.url);
  } finally {
    await db.stop();
  }
}

/** The database, migrated, for one command; closed after it. */
function withPool(fn: (pool: ReturnType<typeof createPool>) => Promise<number>): Promise<number> {
  return withDatabase(async (url) => {
    await migrate(url, createLogger('silent'));
    const pool = createPool(url, 2);
    try {
      return await fn(pool);
    } finally {
      await pool.end();
    }
  });
}

const cliIo = {
  out: (line: string) => process.stdout.write(`${line}\n`),
  err: (line: string) => process.stderr.write(`${line}\n`),
};

async function printUsage(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { days: { type: 'string', default: '7' }, prices: { type: 'string' }, budgets: { type: 'boolean' } },
  });
  if (values.budgets) return printBudgets();
  const days = Number(values.days);
  if (!Number.isInteger(days) || days < 1 || days > 3650) {
    process.stderr.write(`--days must be a whole number from 1 to 3650 (got "${values.days}")\n`);
    return 2;
  }
  let prices: PriceTable;
  try {
    prices = values.prices ? loadPriceTable(values.prices, '--prices') : loadPriceTable(process.env.MODEL_PRICES_FILE);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 1;
  }
  return withDatabase(async (url) => {
    await migrate(url, createLogger('silent'));
    const pool = createPool(url, 2);
    try {
      process.stdout.write(`${formatUsage(await usageSummary(pool, days, prices))}\n`);
    } finally {
      await pool.end();
    }
    return 0;
  });
}

/** `countersign usage --budgets`: the current period of each budget of POLICY_FILE (docs/budgets.md). */
async function printBudgets(): Promise<number> {
  const file = process.env.POLICY_FILE;
  if (!file) {
    process.stdout.write('No budgets: POLICY_FILE is not set (budgets live in the policy file, docs/budgets.md).\n');
    return 0;
  }
  const loaded = loadPolicyFile(file, policyOptionsFromEnv());
  if (!loaded.ok) {
    for (const problem of loaded.problems) process.stderr.write(`${formatPolicyProblem(problem)}\n`);
    return 1;
  }
  return withDatabase(async (url) => {
    await migrate(url, createLogger('silent'));
    const pool = createPool(url, 2);
    try {
      process.stdout.write(`${formatBudgetUse(await budgetUse(pool, loaded.policy.budgets))}\n`);
    } finally {
      await pool.end();
    }
    return 0;
  });
}

/**
 * `countersign policy …`. Reads POLICY_FILE, APPROVERS, APPROVAL_TWO_PERSON_RULE and
 * CUSTOM_SKILLS_DIR from the environment itself: a policy is reviewed in CI, where no bot
 * credentials are set.
 */
function runPolicy(args: string[]): number {
  const result = policyCommand(withFullPersonIds(args), {
    ...(process.env.POLICY_FILE ? { file: process.env.POLICY_FILE } : {}),
    options: policyOptionsFromEnv(),
    toolKinds: registeredToolKinds(),
  });
  const out = result.exitCode === 2 ? process.stderr : process.stdout;
  for (const line of result.lines) out.write(`${line}\n`);
  return result.exitCode;
}

/**
 * `--as console:root` as `console:local:root`: on a platform whose user ids name one account
 * everywhere (not Slack's, unique per workspace only), the short form the audit and `status` show is
 * unambiguous, so it is taken; the workspace is the one the policy compares such a person as.
 */
function withFullPersonIds(args: string[]): string[] {
  const platforms = platformDirectory();
  const full = (id: string) => {
    const short = /^([a-z][a-z0-9-]*):([^\s:]+)$/.exec(id);
    if (!short || !platforms.has(short[1]!)) return id;
    const rules = platforms.rulesOf(short[1]!);
    return rules.workspaceScopedIds ? id : `${short[1]}:${rules.unknownWorkspace}:${short[2]}`;
  };
  return args.map((arg, i) =>
    arg.startsWith('--as=') ? `--as=${full(arg.slice(5))}` : args[i - 1] === '--as' ? full(arg) : arg,
  );
}

/** The policy's options as the environment sets them (APPROVERS, APPROVAL_TWO_PERSON_RULE, CUSTOM_SKILLS_DIR). */
function policyOptionsFromEnv() {
  const env = process.env;
  const approvers = (env.APPROVERS ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  return {
    platforms: platformDirectory(),
    approvers,
    // Read as the bot reads it (no, off, 0 too); unset or unreadable: on, the safe side.
    twoPersonRule: bool.safeParse(env.APPROVAL_TWO_PERSON_RULE ?? 'true').data ?? true,
    ...(env.CUSTOM_SKILLS_DIR ? { customSkillsDir: env.CUSTOM_SKILLS_DIR } : {}),
  };
}

async function exportAudit(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      since: { type: 'string' },
      until: { type: 'string' },
      person: { type: 'string' },
      tool: { type: 'string' },
      outcome: { type: 'string' },
      limit: { type: 'string' },
    },
  });
  const filter = AuditFilter.safeParse(values);
  if (!filter.success) {
    for (const issue of filter.error.issues) process.stderr.write(`${issue.message}\n`);
    return 2;
  }
  return withDatabase(async (url) => {
    await migrate(url, createLogger('silent'));
    const pool = createPool(url, 2);
    try {
      for (const entry of await readAuditLog(pool, filter.data)) process.stdout.write(`${JSON.stringify(entry)}\n`);
    } finally {
      await pool.end();
    }
    return 0;
  });
}

/** A grant's list line without its Markdown (the id's bold, code spans); patterns keep their `**`. */
const plainGrant = (grant: Grant) =>
  describeGrant(grant)
    .replace(/^\*\*([0-9a-f]{8})\*\*/, '$1')
    .replace(/`/g, '');

/** `countersign connections list|revoke`: who is connected to which per-person server; never a token. */
async function runConnections(args: string[]): Promise<number> {
  const [verb, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    options: { json: { type: 'boolean' } },
    allowPositionals: true,
  });
  const person = /^([a-z][a-z0-9-]*):(\S+)$/.exec(positionals[0] ?? '');
  if (verb !== 'list' && !(verb === 'revoke' && person && positionals[1])) {
    process.stderr.write(
      'Usage: countersign connections list [--json] | countersign connections revoke PLATFORM:USER SERVER\n',
    );
    return 2;
  }
  return withDatabase(async (url) => {
    await migrate(url, createLogger('silent'));
    const pool = createPool(url, 2);
    try {
      if (verb === 'list') {
        const all = await listConnections(pool);
        if (values.json) process.stdout.write(`${JSON.stringify(all)}\n`);
        else if (all.length === 0) process.stdout.write('No one is connected to a per-person server.\n');
        else
          for (const c of all)
            process.stdout.write(
              `${c.platform}:${c.userId}${c.workspace ? ` (${c.workspace})` : ''}  ${c.server}  since ${c.connectedAt.toISOString()}${c.lastUsedAt ? `  last used ${c.lastUsedAt.toISOString()}` : ''}\n`,
            );
        return 0;
      }
      const [, platform = '', userId = ''] = person!;
      const server = positionals[1]!;
      const mine = (await listConnections(pool)).filter(
        (c) => c.platform === platform && c.userId === userId && c.server === server,
      );
      if (mine.length === 0) {
        process.stderr.write(`${platform}:${userId} has no connection to ${server}.\n`);
        return 1;
      }
      for (const c of mine) await deleteConnection(pool, c, server);
      await audit(pool, {
        event: 'disconnected',
        actor: { platform: 'cli', userId: userInfo().username },
        detail: { server, person: `${platform}:${userId}` },
      });
      process.stdout.write(`Forgot ${platform}:${userId}'s connection to ${server}.\n`);
      return 0;
    } finally {
      await pool.end();
    }
  });
}

/** `countersign schedules …` (src/schedules/cli.ts), on the configured database. */
async function runSchedules(args: string[]): Promise<number> {
  return withDatabase(async (url) => {
    await migrate(url, createLogger('silent'));
    const pool = createPool(url, 2);
    try {
      return await schedulesCommand(
        pool,
        recordScheduleEvent(pool),
        { platform: 'cli', userId: userInfo().username },
        args,
        {
          out: (line) => process.stdout.write(`${line}\n`),
          err: (line) => process.stderr.write(`${line}\n`),
        },
      );
    } finally {
      await pool.end();
    }
  });
}

/** `countersign status`: what is running, parked and queued, for the operator. */
async function printStatus(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { person: { type: 'string' } } });
  const person = values.person ? /^([a-z][a-z0-9-]*):(?:([^\s:]+):)?([^\s:]+)$/.exec(values.person) : undefined;
  if (values.person !== undefined && !person) {
    process.stderr.write(
      '--person is platform:user (console:root) or platform:workspace:user, as the audit names people\n',
    );
    return 2;
  }
  return withDatabase(async (url) => {
    await migrate(url, createLogger('silent'));
    const pool = createPool(url, 2);
    try {
      const who = person
        ? { platform: person[1]!, userId: person[3]!, ...(person[2] ? { workspace: person[2] } : {}) }
        : undefined;
      process.stdout.write(`${await operatorStatusText(pool, who)}\n`);
      return 0;
    } finally {
      await pool.end();
    }
  });
}

async function runGrants(args: string[]): Promise<number> {
  const [verb, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    options: { json: { type: 'boolean' } },
    allowPositionals: true,
  });
  if (verb !== 'list' && verb !== 'revoke') {
    process.stderr.write('Usage: countersign grants list [--json] | countersign grants revoke ID\n');
    return 2;
  }
  if (verb === 'revoke' && !/^[0-9a-f-]{8,36}$/.test(positionals[0] ?? '')) {
    process.stderr.write('countersign grants revoke needs a grant id (or the 8 characters `grants list` shows).\n');
    return 2;
  }
  return withDatabase(async (url) => {
    await migrate(url, createLogger('silent'));
    const pool = createPool(url, 2);
    try {
      const live = await listLiveGrants(pool, { limit: 10_000 });
      if (verb === 'list') {
        if (values.json) {
          // One JSON array, `[]` for none: a script parses the output whatever it holds.
          process.stdout.write(`${JSON.stringify(live)}\n`);
          return 0;
        }
        for (const g of live) process.stdout.write(`${g.id}  ${plainGrant(g)}\n`);
        if (live.length === 0) process.stdout.write('No standing grants apply.\n');
        return 0;
      }
      const wanted = positionals[0]!;
      const matches = live.filter((g) => g.id.startsWith(wanted));
      if (matches.length !== 1) {
        process.stderr.write(
          matches.length === 0
            ? `No live grant has the id ${wanted} (revoked, expired, or never made).\n`
            : `${matches.length} grants start with ${wanted}; give more of the id.\n`,
        );
        return 1;
      }
      const result = await revokeGrant({ pool }, matches[0]!.id, { platform: 'cli', userId: userInfo().username });
      if (!result.ok) {
        process.stderr.write(`${result.reason}\n`);
        return 1;
      }
      process.stdout.write(`Revoked ${result.grant.id}: ${plainGrant(result.grant)}\n`);
      return 0;
    } finally {
      await pool.end();
    }
  });
}

function printConfig(): number {
  const config = configOrExit();
  const rows = describeConfig(config);
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [key, value] of rows) process.stdout.write(`${key.padEnd(width)}  ${value}\n`);
  return 0;
}

/** The version in the install folder's package.json. */
function version(): string {
  const { version } = JSON.parse(readFileSync(path.join(INSTALL_DIR, 'package.json'), 'utf8')) as { version?: string };
  return version ?? 'unknown';
}

/**
 * `countersign audit | head` closes the pipe while the command still writes: the reader has what it
 * wanted, so the command ends there, with no EPIPE stack. `start` is left alone (the bot's console
 * owns its output).
 */
function endQuietlyWhenTheReaderLeaves(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(0);
  });
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== 'start') endQuietlyWhenTheReaderLeaves();
  if (command === '--version' || command === '-v' || command === 'version') {
    process.stdout.write(`countersign ${version()}\n`);
    return 0;
  }
  if (command !== undefined && Object.hasOwn(COMMANDS, command)) {
    if (asksHelp(rest)) {
      process.stdout.write(commandHelp(command));
      return 0;
    }
    const problem = invocationProblem(command, rest);
    if (problem) {
      process.stderr.write(`${problem}\n`);
      return 2;
    }
  }
  switch (command) {
    case 'start':
      return start(rest);
    case 'migrate':
      return runMigrate();
    case 'config':
      return printConfig();
    case 'usage':
      return printUsage(rest);
    case 'policy':
      return runPolicy(rest);
    case 'audit':
      return exportAudit(rest);
    case 'grants':
      return runGrants(rest);
    case 'status':
      return printStatus(rest);
    case 'connections':
      return runConnections(rest);
    case 'schedules':
      return runSchedules(rest);
    case 'worktrees':
      return withPool((pool) =>
        worktreesCli(configOrExit(), pool, (c, b) => pendingMergeCard(pool, c, b), rest, cliIo),
      );
    case 'skills':
      return skillsCommand(rest, {
        out: (line) => process.stdout.write(`${line}\n`),
        err: (line) => process.stderr.write(`${line}\n`),
      });
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return 0;
    // A missing or unknown command is a wrong invocation, as for `policy`, `skills` and `grants`.
    case undefined:
      process.stderr.write(USAGE);
      return 2;
    default:
      process.stderr.write(`Unknown command "${command}".\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(`countersign: ${(error as Error).message ?? String(error)}\n`);
    process.exit(1);
  },
);
