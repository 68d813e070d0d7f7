import type { Logger } from 'pino';
import { INSTALL_DIR, type Config } from './config.ts';
import { createLogger } from './log.ts';
import type { Pool } from './db/pool.ts';
import type { ToolRegistry } from './agent/tools/registry.ts';
import type { ApprovalService } from './approval/service.ts';
import type { PolicyGate } from './approval/gate.ts';
import type { AnyTool } from './agent/tools/tool.ts';
import type { SkillRegistry } from './skills/index.ts';
import type { ModelProvider } from './agent/model.ts';
import { OutboundRegistry, type Outbound } from './reply/outbound.ts';
import { createConsoleAdapter } from './adapters/console/index.ts';
import { TurnEvents } from './queue/turn-events.ts';
import { recordFeedback } from './audit/feedback.ts';
import type { HttpServer } from './http/server.ts';
import { activeWorkItemOf, conversationExists } from './queue/turn-lifecycle.ts';
import { claimSession } from './queue/session-turns.ts';
import { expireSessionCards } from './queue/housekeeping-sql.ts';
import { admit } from './approval/admission.ts';
import { pressButton } from './approval/press-button.ts';
import { BudgetAllowances } from './budgets/index.ts';
import { budgetStatusText } from './budgets/view.ts';
import { RateBuckets } from './reply/rate-bucket.ts';
import { platformDirectory } from './adapters/registry.ts';
import type { PlatformRules } from './core/platform-rules.ts';
import { slackInboundSettings, slackOutboundSettings } from './adapters/slack/settings.ts';
import { discordSettings } from './adapters/discord/settings.ts';
import { metrics } from './metrics.ts';
import { requestStop, type StopResult } from './queue/stop-requests.ts';
import type { Requester } from './core/person.ts';
import { disconnectValue } from './core/buttons.ts';
import type { AdapterContext, PlatformAdapter } from './adapters/platform.ts';
import { Cleanups } from './wiring/cleanups.ts';
import { openDatabase } from './wiring/database.ts';
import { featureTools, openSkills, openTools } from './wiring/tools.ts';
import { createApprovals, openPolicyFile } from './wiring/approvals.ts';
import { startWorker } from './wiring/worker.ts';
import { startHttp } from './wiring/http.ts';
import { openCodeWork } from './wiring/repos.ts';
import { openSandbox } from './wiring/sandbox.ts';
import { scheduleVerbs } from './wiring/schedules.ts';
import { connectionGateOf, openConnections, personalAuthOf, routeConnectPages } from './wiring/connections.ts';
import { readWorkCommand } from './repos/work-commands.ts';
import type { RepoCatalog } from './repos/repos-config.ts';
import { workStatusText } from './queue/work-status.ts';
import type { PersonalConnections } from './connections/service.ts';

export { resolveFromCwd } from './wiring/database.ts';

export type Role = 'all' | 'ingress' | 'worker';

export interface StartOptions {
  role: Role;
  /** Replace the configured model (tests, benchmarks). */
  provider?: ModelProvider;
  /** Extra outbound clients (test platforms). */
  outbounds?: Outbound[];
  /** Extra tools (tests, embedding applications). */
  tools?: AnyTool[];
  /** Platform adapters to run; default: Slack and/or Discord when their tokens are configured. */
  platforms?: PlatformAdapter[];
  /** Run the console adapter on these streams; default: when no Slack/Discord credentials are set. */
  console?: { input: NodeJS.ReadableStream; output: NodeJS.WriteStream; interactive: boolean } | false;
  log?: Logger;
}

export interface Countersign {
  config: Config;
  log: Logger;
  pool: Pool;
  events: TurnEvents;
  approvals: ApprovalService;
  /** Per-person MCP connections, where any server says `"auth": "oauth"` (docs/connections.md). */
  connections?: PersonalConnections;
  tools: ToolRegistry;
  skills: SkillRegistry;
  databaseUrl: string;
  /** A person asks to stop a running turn (Stop button, Ctrl-C); only the requester or an approver may. */
  stopTurn(workItemId: string, by: Requester): Promise<StopResult>;
  http: HttpServer;
  /** Resolves when the console's input ended (piped stdin) — the process should then stop. */
  terminalDone?: Promise<void>;
  /** Resolves if the worker pools die on their own; the process should stop and be restarted. */
  failed: Promise<unknown>;
  stop(): Promise<void>;
}

function usesConsole(config: Config): boolean {
  return !config.SLACK_BOT_TOKEN && !config.DISCORD_TOKEN;
}

type PlatformName = 'slack' | 'discord';

/** An embedding application's adapter's rules, or a start-up error that says what is missing. */
function rulesOf(adapter: PlatformAdapter, index: number): PlatformRules {
  if (!adapter.rules?.name) {
    throw new Error(
      `StartOptions.platforms[${index}] has no rules: a PlatformAdapter names its platform and describes its people and places (PlatformRules, src/core/platform-rules.ts)`,
    );
  }
  return adapter.rules;
}

/** A platform this process registers: its outbound always, its inbound half where `listens` says. */
interface Platform {
  /** Unset for adapters an embedding application passes in (`StartOptions.platforms`). */
  name?: PlatformName | 'console';
  adapter: PlatformAdapter;
}

/**
 * The platforms whose credentials are configured, each given its own section of the configuration.
 * Loaded lazily: a console-only run needs neither SDK.
 */
async function configuredPlatforms(config: Config, buckets: RateBuckets, log: Logger): Promise<Platform[]> {
  const platforms: Platform[] = [];
  const { SLACK_BOT_TOKEN, DISCORD_TOKEN } = config;
  if (SLACK_BOT_TOKEN) {
    const { createSlackAdapter } = await import('./adapters/slack/index.ts');
    const section = { ...config, SLACK_BOT_TOKEN };
    const adapter = createSlackAdapter(slackOutboundSettings(section), buckets, log, slackInboundSettings(section));
    platforms.push({ name: 'slack', adapter });
  }
  if (DISCORD_TOKEN) {
    const { createDiscordAdapter } = await import('./adapters/discord/index.ts');
    platforms.push({
      name: 'discord',
      adapter: createDiscordAdapter(discordSettings({ ...config, DISCORD_TOKEN }), buckets),
    });
  }
  return platforms;
}

/**
 * Refuses a role that could do nothing: an ingress process with no platform to listen to would
 * start, report itself healthy and sit idle while messages go unanswered. (Checked by the CLI:
 * an embedding application may run an ingress that enqueues work items itself.)
 */
export function checkRole(config: Config, role: Role): void {
  if (role !== 'ingress') return;
  const configured = [config.SLACK_BOT_TOKEN && 'slack', config.DISCORD_TOKEN && 'discord'].filter(Boolean);
  if (configured.length === 0) {
    throw new Error(
      '--role=ingress has no platform to listen to: set SLACK_BOT_TOKEN or DISCORD_TOKEN (the console runs only with --role=all)',
    );
  }
}

/**
 * Whether this process runs the platform's inbound half. The console listens wherever it was given a
 * terminal; a chat platform in roles all and ingress, as INGRESS_PLATFORMS allows (unset: every one).
 */
function listens(config: Config, role: Role, platform: Platform, hasTerminal: boolean): boolean {
  if (platform.name === 'console') return hasTerminal;
  if (role === 'worker') return false;
  return !platform.name || config.INGRESS_PLATFORMS === undefined || config.INGRESS_PLATFORMS.includes(platform.name);
}

/** Feeds turn latencies into the Prometheus histograms. */
function observeTurns(events: TurnEvents): void {
  const since = (createdAt: string) => (Date.now() - Date.parse(createdAt)) / 1000;
  events.on('finished', ({ item }) => metrics.turnDuration.observe({ outcome: 'done' }, since(item.createdAt)));
  events.on('failed', ({ item }) => metrics.turnDuration.observe({ outcome: 'failed' }, since(item.createdAt)));
  events.on('cancelled', ({ item }) => metrics.turnDuration.observe({ outcome: 'stopped' }, since(item.createdAt)));
  events.on('awaitingApproval', ({ item }) =>
    metrics.turnDuration.observe({ outcome: 'awaiting_approval' }, since(item.createdAt)),
  );
  events.on('firstVisibleText', ({ item, latencyMs }) =>
    metrics.firstVisibleText.observe({ platform: item.reply.platform }, latencyMs / 1000),
  );
}

type ConsoleStreams = Exclude<StartOptions['console'], false | undefined>;

/** The streams the console runs on: as given, or the terminal when role all has no Slack/Discord credentials. */
function consoleStreams(config: Config, options: StartOptions): ConsoleStreams | undefined {
  if (options.console === false) return undefined;
  if (options.console) return options.console;
  if (options.role !== 'all' || !usesConsole(config)) return undefined;
  return {
    input: process.stdin,
    output: process.stdout,
    interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
  };
}

/**
 * Starts Countersign: the database (embedded when DATABASE_URL is unset), migrations, the worker
 * pools (role all|worker), the inbound adapters (role all|ingress) and the HTTP endpoints.
 */
export async function startCountersign(config: Config, options: StartOptions): Promise<Countersign> {
  const consoleOptions = consoleStreams(config, options);
  // With the console, stdout is the answer stream (a terminal or a pipe): logs stay on stderr and
  // quiet, so a piped run reads as questions and answers, not JSON.
  const level = config.LOG_LEVEL ?? (consoleOptions ? 'warn' : 'info');
  const log = options.log ?? createLogger(level);
  const cleanups = new Cleanups(log);
  const runsTurns = options.role !== 'ingress';

  try {
    // The policy first: a bad file stops the start with every problem at file:line, before anything connects.
    const directory = platformDirectory(options.platforms?.map(rulesOf));
    const policies = openPolicyFile(config, log, directory);
    cleanups.add(async () => policies.close());
    const { databaseUrl, pool, admissionPool } = await openDatabase(config, log, cleanups);
    const events = new TurnEvents();
    observeTurns(events);

    // The console's outbound exists in every process: a turn addressed to `console` replies there.
    const consoleAdapter = createConsoleAdapter(consoleOptions);
    const platforms = await platformsToRun(config, options, consoleAdapter, new RateBuckets(pool), log);
    const outbounds = registerOutbounds(platforms, options, events);

    // Once, before anything starts a program: where none can run in a sandbox, one line says so.
    const sandbox = await openSandbox(config, log, { runsTurns });
    const codeWork = await openCodeWork(config, log, pool, { runsTurns, sandbox });
    const connections = openConnections(config, log, pool, directory);
    const skills = await openSkills(config, log, { runsTurns }, cleanups);
    const agentTools = await openTools(
      config,
      log,
      {
        skills,
        runsTurns,
        sandbox,
        extra: [...featureTools(config, pool, outbounds, codeWork), ...(options.tools ?? [])],
        ...(codeWork ? { rootOf: codeWork.rootOf } : {}),
        ...(connections ? { personalAuth: personalAuthOf(connections, pool) } : {}),
      },
      cleanups,
    );
    const cardRenderers = platforms.flatMap(({ adapter }) => (adapter.cards ? [adapter.cards] : []));
    const { gate, approvals } = createApprovals({
      config,
      log,
      pool,
      outbounds,
      policies,
      agentTools,
      cardRenderers,
      platformRules: directory,
      ...(codeWork ? { changeDiff: codeWork.changeDiff, workspaceOf: codeWork.taintedWorkspaceOf } : {}),
      ...(connections ? { connections: connectionGateOf(connections, agentTools.tools, outbounds, directory) } : {}),
    });

    let reportFailure: (error: unknown) => void = () => undefined;
    const failed = new Promise<unknown>((resolve) => (reportFailure = resolve));
    const worker = {
      config,
      role: options.role,
      databaseUrl,
      pool,
      log,
      events,
      agentTools,
      skills,
      outbounds,
      approvals,
      platforms: directory,
      ...(codeWork ? { codeWork } : {}),
      ...(connections ? { connections } : {}),
    };
    const runner = runsTurns
      ? await startWorker({ ...worker, provider: options.provider, onFatal: (error) => reportFailure(error) }, cleanups)
      : undefined;

    const http = await startHttp(config, log, { pool, runner }, cleanups);
    if (connections) routeConnectPages(http, connections, approvals, directory, log);
    const stopTurn = (workItemId: string, by: Requester) =>
      requestStop(pool, workItemId, by, (person, reply) => gate.isApprover(person, reply));
    const hasTerminal = consoleOptions !== undefined;
    const inbound: InboundWiring = {
      ...{ config, pool, admissionPool, log, approvals, skills, http, events, gate, stopTurn, hasTerminal },
      ...(codeWork ? { catalog: codeWork.catalog } : {}),
      ...(connections ? { connections } : {}),
    };
    await startInbounds(config, options.role, platforms, inbound, cleanups);
    log.info({ port: http.port, role: options.role, installDir: INSTALL_DIR }, 'Countersign is running');

    let stopping: Promise<void> | undefined;
    return {
      config,
      log,
      pool,
      events,
      approvals,
      ...(connections ? { connections } : {}),
      tools: agentTools.tools,
      skills,
      databaseUrl,
      stopTurn,
      http,
      terminalDone: consoleAdapter.done,
      failed,
      stop: () => (stopping ??= cleanups.run()),
    };
  } catch (error) {
    await cleanups.run();
    throw error;
  }
}

/**
 * The platforms this process registers: those given (an embedding application's), or the configured
 * ones; the console last, so its session starts once every other platform listens.
 */
async function platformsToRun(
  config: Config,
  options: StartOptions,
  consoleAdapter: PlatformAdapter,
  buckets: RateBuckets,
  log: Logger,
): Promise<Platform[]> {
  return [
    ...(options.platforms
      ? options.platforms.map((adapter) => ({ adapter }))
      : await configuredPlatforms(config, buckets, log)),
    { name: 'console', adapter: consoleAdapter },
  ];
}

/** Every platform's outbound, and the extra ones given; where turns run, the platforms follow them. */
function registerOutbounds(platforms: Platform[], options: StartOptions, events: TurnEvents): OutboundRegistry {
  const outbounds = new OutboundRegistry();
  for (const { adapter } of platforms) outbounds.register(adapter.outbound);
  // What a platform shows around the turns this process runs (Slack's agent sessions).
  if (options.role !== 'ingress') for (const { adapter } of platforms) adapter.observeTurns?.(events);
  for (const outbound of options.outbounds ?? []) outbounds.register(outbound);
  return outbounds;
}

/** What the platforms' inbound halves are given. */
interface InboundWiring {
  config: Config;
  pool: Pool;
  /** Admissions' own connections: a message is taken in even while other work holds all of `pool`'s. */
  admissionPool: Pool;
  log: Logger;
  approvals: ApprovalService;
  skills: SkillRegistry;
  http: HttpServer;
  events: TurnEvents;
  gate: PolicyGate;
  stopTurn(workItemId: string, by: Requester): Promise<StopResult>;
  /** Whether the console was given streams to run on. */
  hasTerminal: boolean;
  /** The repositories of code work, where configured. */
  catalog?: RepoCatalog;
  /** Per-person connections to MCP servers, where any is configured. */
  connections?: PersonalConnections;
}

/** Starts the inbound half of each platform this process listens to (see `listens`). */
async function startInbounds(
  config: Config,
  role: Role,
  platforms: Platform[],
  wiring: InboundWiring,
  cleanups: Cleanups,
): Promise<void> {
  for (const platform of platforms) {
    if (!listens(config, role, platform, wiring.hasTerminal)) continue;
    const inbound = await platform.adapter.startInbound(adapterContext(wiring, platform.adapter.rules));
    cleanups.add(() => inbound.stop());
  }
}

/** What an adapter is given: the core's verbs, bound to its platform, and none of its storage. */
function adapterContext(wiring: InboundWiring, rules: PlatformRules): AdapterContext {
  const { pool, admissionPool, gate, approvals, log, stopTurn } = wiring;
  const recordFeedbackOf: AdapterContext['recordFeedback'] = (workItemId, by, vote) =>
    recordFeedback(pool, workItemId, by, vote, (person, reply) => gate.mayUse(person, reply));
  const allowances = new BudgetAllowances(pool, (person, reply) => gate.isApprover(person, reply));
  const allowBudget = (offerId: string, by: Requester) => allowances.grant(offerId, by);
  const { schedules, changeSchedule, scheduleCommand } = scheduleVerbs(wiring.config, pool, approvals);
  return {
    log,
    approvals,
    skills: wiring.skills,
    http: wiring.http,
    events: wiring.events,
    admit: (request) => admit({ pool: admissionPool, approvals, log, platform: rules.name }, request),
    conversationExists: (id) => conversationExists(pool, id),
    activeTurnOf: (id) => activeWorkItemOf(pool, id),
    pressButton: (value, by, surface) =>
      pressButton(
        {
          approvals,
          recordFeedback: recordFeedbackOf,
          stopTurn,
          allowBudget,
          changeSchedule,
          ...(wiring.connections
            ? { disconnect: (server: string, who: Requester) => wiring.connections!.disconnectAndSay(who, server) }
            : {}),
        },
        value,
        by,
        surface,
      ),
    recordFeedback: recordFeedbackOf,
    stopTurn,
    claimSession: async (session, by) => {
      if (!rules.operatorTerminal) throw new Error(`${rules.name} has no process-bound sessions to claim`);
      const claim = await claimSession(pool, rules.name, { session, by });
      const end = async () => {
        if ((await expireSessionCards(pool, rules.name, session)) > 0) await approvals.expireStale();
      };
      return { ...claim, end };
    },
    workCommand: (command, text) =>
      command === 'schedule' ? scheduleCommand(text) : readWorkCommand(wiring.catalog, command, text),
    repoNames: wiring.catalog?.names() ?? [],
    workStatus: (person) => workStatusText(pool, person),
    budgetStatus: (person, place) =>
      budgetStatusText(pool, place ? approvals.budgetsFor(person, place) : approvals.budgets(), place === undefined),
    schedules,
    connect: async (person, server) =>
      wiring.connections
        ? wiring.connections.start(person, server)
        : { ok: false, message: 'No per-person MCP servers are configured here.' },
    connections: async (person) => {
      if (!wiring.connections) return { text: 'No per-person MCP servers are configured here.', buttons: [] };
      const { text, connected } = await wiring.connections.describe(person);
      return {
        text,
        buttons: connected.map((s) => ({
          label: `Disconnect ${s}`,
          value: disconnectValue(s),
          style: 'danger' as const,
        })),
      };
    },
    connectableServers: wiring.connections?.servers ?? [],
  };
}
