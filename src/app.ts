import path from 'node:path';
import type { Logger } from 'pino';
import { INSTALL_DIR, type Config } from './config.ts';
import { createLogger } from './log.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded.ts';
import { migrate } from './db/migrate.ts';
import { isDatabaseUnavailable } from './db/errors.ts';
import { createPool, type Pool } from './db/pool.ts';
import { createProvider } from './agent/providers/index.ts';
import { ToolRegistry } from './agent/tools/registry.ts';
import { currentTimeTool } from './agent/tools/current-time.ts';
import { requestHumanApprovalTool } from './agent/tools/request-human-approval.ts';
import { ApprovalService, SHOW_CARD_TASK } from './approval/service.ts';
import { z } from 'zod';
import type { ApprovalScope } from './approval/envelope.ts';
import { createHousekeepingTask, HOUSEKEEPING_CRONTAB, HOUSEKEEPING_TASK } from './queue/tasks/housekeeping.ts';
import type { AnyTool } from './agent/tools/tool.ts';
import { buildToolCatalog } from './agent/tools/catalog.ts';
import {
  createSkillTools,
  SKILL_TOOL_NAMES,
  openSkillRegistry,
  skillDirs,
  skillsPromptSection,
  type SkillRegistry,
} from './skills/index.ts';
import { buildSystemPrompt } from './agent/system-prompt.ts';
import type { ModelProvider } from './agent/model.ts';
import { OutboundRegistry, type Outbound } from './reply/outbound.ts';
import { CardRenderers } from './approval/card-renderers.ts';
import { PolicyGate } from './approval/gate.ts';
import { PolicyStore } from './policy/index.ts';
import { createConsoleAdapter } from './adapters/console/index.ts';
import { startQueueRunner, type QueueRunner } from './queue/runner.ts';
import { createWorkItemTask } from './queue/tasks/run-work-item.ts';
import { TurnEvents } from './queue/turn-events.ts';
import { recordFeedback } from './audit/feedback.ts';
import { WorkerLiveness } from './queue/worker-liveness.ts';
import { startHttpServer, type HttpServer } from './http/server.ts';
import { enqueueWorkItem } from './queue/turn-lifecycle.ts';
import { healthHandler } from './http/health.ts';
import { metricsHandler } from './http/metrics.ts';
import { metrics } from './metrics.ts';
import { requestStop, StopListener, type StopResult } from './queue/stop-requests.ts';
import type { Requester } from './core/person.ts';
import type { InboundSettings, PlatformAdapter } from './adapters/platform.ts';

export type Role = 'all' | 'ingress' | 'worker';

/** Characters of the system prompt given to the list of skills (names and descriptions only). */
const SKILLS_PROMPT_BUDGET = 4000;

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
  tools: ToolRegistry;
  skills: SkillRegistry;
  databaseUrl: string;
  /** A person asks to stop a running turn (Stop button, Ctrl-C); only the requester or an approver may. */
  stopTurn(workItemId: string, by: Requester): Promise<StopResult>;
  http: HttpServer;
  /** Resolves when the console's input ended (piped stdin) — the process should then stop. */
  consoleDone?: Promise<void>;
  /** Resolves if the worker pools die on their own; the process should stop and be restarted. */
  failed: Promise<unknown>;
  stop(): Promise<void>;
}

export function usesConsole(config: Config): boolean {
  return !config.SLACK_BOT_TOKEN && !config.DISCORD_TOKEN;
}

/**
 * Migrates, waiting (up to two minutes) for a database that is restarting or not up yet: a process
 * started during a database restart should come up when the database does, not crash.
 */
async function migrateWhenReachable(databaseUrl: string, log: Logger): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (let delay = 250; ; delay = Math.min(delay * 2, 5000)) {
    try {
      await migrate(databaseUrl, log);
      return;
    } catch (error) {
      if (!isDatabaseUnavailable(error) || Date.now() > deadline) throw error;
      log.warn({ err: error, retryInMs: delay }, 'database not reachable yet; waiting for it');
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

type PlatformName = 'slack' | 'discord';

/** A platform this process registers: its outbound always, its inbound half where `listens` says. */
interface Platform {
  /** Unset for adapters an embedding application passes in (`StartOptions.platforms`). */
  name?: PlatformName | 'console';
  adapter: PlatformAdapter;
  /** The settings its inbound half is given: its own section only. */
  settings: InboundSettings;
}

/** What each platform's inbound half needs of the configuration; each adapter sees only its own section. */
export function inboundSettings(config: Config): InboundSettings {
  const settings: InboundSettings = {};
  if (config.SLACK_BOT_TOKEN) {
    settings.slack = {
      botToken: config.SLACK_BOT_TOKEN,
      mode: config.SLACK_MODE,
      appToken: config.SLACK_APP_TOKEN,
      signingSecret: config.SLACK_SIGNING_SECRET,
      apiUrl: config.SLACK_API_URL,
      skillsCommand: config.SLACK_SKILLS_COMMAND,
      skillCommand: config.SLACK_SKILL_COMMAND,
      countersignCommand: config.SLACK_COUNTERSIGN_COMMAND,
    };
  }
  if (config.DISCORD_TOKEN) {
    if (!config.DISCORD_APPLICATION_ID) {
      throw new Error('DISCORD_TOKEN and DISCORD_APPLICATION_ID are required for Discord');
    }
    settings.discord = {
      token: config.DISCORD_TOKEN,
      applicationId: config.DISCORD_APPLICATION_ID,
      guildId: config.DISCORD_GUILD_ID,
      apiUrl: config.DISCORD_API_URL,
    };
  }
  return settings;
}

/** The platforms whose credentials are configured. Loaded lazily: a console-only run needs neither SDK. */
async function configuredPlatforms(
  config: Config,
  settings: InboundSettings,
  pool: Pool,
  log: Logger,
): Promise<Platform[]> {
  const platforms: Platform[] = [];
  const { slack, discord } = settings;
  if (slack) {
    const { createSlackAdapter } = await import('./adapters/slack/index.ts');
    const outboundSettings = {
      botToken: slack.botToken,
      apiUrl: slack.apiUrl,
      updatesPerMinute: config.SLACK_UPDATES_PER_MINUTE,
      streaming: config.SLACK_STREAMING,
      streamRolloverSeconds: config.SLACK_STREAM_ROLLOVER_SECONDS,
      streamStartsPerMinute: config.SLACK_STREAM_STARTS_PER_MINUTE,
      agentSessions: config.SLACK_AGENT_SESSIONS,
      agentSessionsFallbackMinutes: config.SLACK_AGENT_SESSIONS_FALLBACK_MINUTES,
    };
    platforms.push({ name: 'slack', adapter: createSlackAdapter(outboundSettings, pool, log), settings: { slack } });
  }
  if (discord) {
    const { createDiscordAdapter } = await import('./adapters/discord/index.ts');
    platforms.push({ name: 'discord', adapter: createDiscordAdapter(discord, pool), settings: { discord } });
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

/** Resolves a path setting against the working directory (the operator's frame of reference). */
export function resolveFromCwd(p: string): string {
  return path.resolve(process.cwd(), p);
}

/**
 * Starts Countersign: the database (embedded when DATABASE_URL is unset), migrations, the worker
 * pools (role all|worker), the inbound adapters (role all|ingress) and the HTTP endpoints.
 */
export async function startCountersign(config: Config, options: StartOptions): Promise<Countersign> {
  const consoleOptions =
    options.console === false
      ? undefined
      : (options.console ??
        (options.role === 'all' && usesConsole(config)
          ? {
              input: process.stdin,
              output: process.stdout,
              interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
            }
          : undefined));
  // With the console, stdout is the answer stream (a terminal or a pipe): logs stay on stderr and
  // quiet, so a piped run reads as questions and answers, not JSON.
  const level = config.LOG_LEVEL ?? (consoleOptions ? 'warn' : 'info');
  const log = options.log ?? createLogger(level);
  const cleanups: Array<() => Promise<void>> = [];
  const runCleanups = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await cleanup().catch((error: unknown) => log.warn({ err: error }, 'error while stopping'));
    }
  };

  try {
    // The policy first: a bad file stops the start with every problem at file:line, before anything connects.
    const policies = openPolicyStore(config, log);
    cleanups.push(async () => policies.close());
    let databaseUrl = config.DATABASE_URL;
    if (!databaseUrl) {
      const dir = resolveFromCwd(config.EMBEDDED_POSTGRES_DIR);
      log.info({ dir }, 'DATABASE_URL is not set; starting an embedded Postgres');
      const embedded: EmbeddedDatabase = await startEmbeddedPostgres({ dir, log });
      cleanups.push(() => embedded.stop());
      databaseUrl = embedded.url;
    }
    await migrateWhenReachable(databaseUrl, log);
    const pool = createPool(databaseUrl, config.DATABASE_POOL_SIZE, log);
    cleanups.push(() => pool.end());
    const events = new TurnEvents();
    observeTurns(events);

    // The console's outbound exists in every process: a turn addressed to `console` replies there.
    const consoleAdapter = createConsoleAdapter(consoleOptions);
    const settings = inboundSettings(config);
    // The console last: its session starts once every other platform listens.
    const platforms: Platform[] = [
      ...(options.platforms
        ? options.platforms.map((adapter) => ({ adapter, settings }))
        : await configuredPlatforms(config, settings, pool, log)),
      { name: 'console', adapter: consoleAdapter, settings: {} },
    ];
    const outbounds = new OutboundRegistry();
    for (const { adapter } of platforms) outbounds.register(adapter.outbound);
    // What a platform shows around the turns this process runs (Slack's agent sessions).
    if (options.role !== 'ingress') for (const { adapter } of platforms) adapter.observeTurns?.(events);
    for (const outbound of options.outbounds ?? []) outbounds.register(outbound);

    // Skills: problems are reported and the skill skipped, never fatal; edits on disk apply without a restart.
    const skills: SkillRegistry = await openSkillRegistry({
      ...skillDirs(config),
      log,
      watch: options.role !== 'ingress',
    });
    cleanups.push(async () => skills.close());
    // The registry logs each problem once as it finds it; here only a count, pointing at /skills.
    const skipped = skills.problems().length;
    if (skipped) log.warn(`${skipped} skill problem(s) found; /skills lists the skipped skills and why`);

    // Workspace tools, run_command when enabled, and MCP servers (not in ingress: it runs no tools).
    const catalog = await buildToolCatalog(config, log, { mcp: options.role !== 'ingress' });
    cleanups.push(() => catalog.close());
    const { workspaceRoot } = catalog;
    const tools = new ToolRegistry([
      currentTimeTool,
      requestHumanApprovalTool,
      ...createSkillTools(skills),
      ...catalog.tools,
      ...(options.tools ?? []),
    ]);
    catalog.onMcpToolsChanged((mcpTools) => tools.replaceMcpTools(mcpTools));
    // An approval depends on the tools its calls use (and the skills, when a call reads them); an
    // unrelated MCP server reconnecting must not refuse it as drift.
    const scope = (toolNames: readonly string[]): ApprovalScope => ({
      agent: config.AGENT_NAME,
      workspaceRoot,
      tools: tools.fingerprint(toolNames),
      skills: toolNames.some((name) => SKILL_TOOL_NAMES.has(name)) ? skills.version() : 'not used',
    });
    // Clicks arrive at inbound adapters, so every role verifies and consumes them.
    const gate = new PolicyGate(policies, tools, config.CONVERSATION_MODE, workspaceRoot);
    const cards = new CardRenderers(
      outbounds,
      platforms.flatMap(({ adapter }) => (adapter.cards ? [adapter.cards] : [])),
    );
    const approvals = new ApprovalService({
      pool,
      outbounds,
      cards,
      gate,
      tools,
      scope,
      log,
      settings: {
        ttlSeconds: config.APPROVAL_TTL_SECONDS,
        approvers: config.APPROVERS,
        twoPersonRule: config.APPROVAL_TWO_PERSON_RULE,
        approvalChannels: config.APPROVAL_CHANNEL,
        rejectionAuditsPerMinute: config.APPROVAL_REJECTION_AUDITS_PER_MINUTE,
        grantTtlSeconds: config.GRANT_TTL_SECONDS,
      },
    });

    let reportFailure: (error: unknown) => void = () => undefined;
    const failed = new Promise<unknown>((resolve) => (reportFailure = resolve));
    let runner: QueueRunner | undefined;
    if (options.role !== 'ingress') {
      const provider = options.provider ?? createProvider(config, log);
      const fence = new AbortController();
      const liveness = new WorkerLiveness({
        pool,
        log,
        role: options.role,
        heartbeatSeconds: config.WORKER_HEARTBEAT_SECONDS,
        deadAfterSeconds: config.WORKER_DEAD_AFTER_SECONDS,
        onFenced: () => fence.abort(new Error('this worker was declared dead by its peers')),
      });
      await liveness.start();
      cleanups.push(() => liveness.stop());
      const draining = new AbortController();
      const stops = new StopListener(databaseUrl, log);
      await stops.start();
      cleanups.push(() => stops.close());
      const task = createWorkItemTask({
        pool,
        config,
        provider,
        tools,
        outbounds,
        log,
        events,
        liveness,
        fence: fence.signal,
        stops,
        draining: draining.signal,
        approvals,
        systemPrompt: (item) =>
          buildSystemPrompt(
            {
              agentName: config.AGENT_NAME,
              sections: [skillsPromptSection(skills, SKILLS_PROMPT_BUDGET), ...catalog.promptNotes],
            },
            item,
          ),
      });
      const startedRunner = await startQueueRunner({
        connectionString: databaseUrl,
        log,
        interactiveConcurrency: config.WORKER_CONCURRENCY,
        backgroundConcurrency: config.BACKGROUND_CONCURRENCY,
        pollIntervalMs: config.WORKER_POLL_INTERVAL_MS,
        shutdownGraceMs: config.SHUTDOWN_GRACE_SECONDS * 1000,
        workItemTask: task,
        interactiveTasks: {
          [SHOW_CARD_TASK]: async (payload) => {
            const { envelopeId } = z.object({ envelopeId: z.uuid() }).parse(payload);
            await approvals.showPendingCard(envelopeId);
          },
        },
        backgroundTasks: {
          [HOUSEKEEPING_TASK]: createHousekeepingTask({
            pool,
            approvals,
            log,
            events,
            settings: {
              historyRetentionDays: config.HISTORY_RETENTION_DAYS,
              auditRetentionDays: config.AUDIT_RETENTION_DAYS,
            },
          }),
        },
        crontab: HOUSEKEEPING_CRONTAB,
        // The process leaves (src/cli.ts): stopping waits for running turns (aborting them after the
        // grace period, as graphile-worker does), then releases their locks for a live worker.
        onFatal: (error) => reportFailure(error),
        onPoolCreated: (poolId) => {
          liveness
            .claimSlot(poolId)
            .catch((error: unknown) => log.warn({ err: error }, 'could not record worker pool'));
        },
      });
      runner = startedRunner;
      cleanups.push(async () => {
        // Turns hand over at their next checkpoint; graphile-worker aborts what is left after the grace period.
        draining.abort();
        await startedRunner.stop();
      });
      log.info(
        { provider: provider.name, model: provider.model, concurrency: config.WORKER_CONCURRENCY, role: options.role },
        'worker started',
      );
    }

    const http = await startHttpServer(config.HTTP_PORT, config.HTTP_HOST, log);
    cleanups.push(() => http.close());
    http.route(
      '/healthz',
      healthHandler({
        pool,
        workerRunning: runner ? () => runner.running : undefined,
        notReady: () => http.notReady(),
      }),
    );
    http.route('/metrics', metricsHandler(pool, { token: config.METRICS_TOKEN }));
    const stopTurn = (workItemId: string, by: Requester) =>
      requestStop(pool, workItemId, by, (person, reply) => gate.isApprover(person, reply));

    for (const platform of platforms) {
      if (!listens(config, options.role, platform, consoleOptions !== undefined)) continue;
      const inbound = await platform.adapter.startInbound({
        settings: platform.settings,
        pool,
        log,
        approvals,
        skills,
        http,
        events,
        enqueue: (draft) => enqueueWorkItem(pool, draft),
        stopTurn,
        recordFeedback: (workItemId, by, vote) =>
          recordFeedback(pool, workItemId, by, vote, (person, reply) => gate.mayUse(person, reply)),
      });
      cleanups.push(() => inbound.stop());
    }
    log.info({ port: http.port, role: options.role, installDir: INSTALL_DIR }, 'Countersign is running');

    let stopping: Promise<void> | undefined;
    return {
      config,
      log,
      pool,
      events,
      approvals,
      tools,
      skills,
      databaseUrl,
      stopTurn,
      http,
      consoleDone: consoleAdapter.done,
      failed,
      stop: () => (stopping ??= runCleanups()),
    };
  } catch (error) {
    await runCleanups();
    throw error;
  }
}

/**
 * POLICY_FILE (or the built-in policy), loaded and watched. The policy file and the MCP config are
 * guarded like scripts when they live inside the agent's workspace: writing them changes the agent.
 */
function openPolicyStore(config: Config, log: Logger): PolicyStore {
  const workspace = path.resolve(process.cwd(), config.AGENT_WORKSPACE_ROOT);
  const protectedPaths = [config.POLICY_FILE, config.MCP_CONFIG].flatMap((file) => {
    if (!file) return [];
    const inside = path.relative(workspace, path.resolve(process.cwd(), file));
    return inside && !inside.startsWith('..') && !path.isAbsolute(inside) ? [inside.split(path.sep).join('/')] : [];
  });
  const store = new PolicyStore({
    ...(config.POLICY_FILE ? { file: config.POLICY_FILE } : {}),
    approvers: config.APPROVERS,
    twoPersonRule: config.APPROVAL_TWO_PERSON_RULE,
    customSkillsDir: config.CUSTOM_SKILLS_DIR,
    protectedPaths,
    log,
  });
  const policy = store.load();
  if (config.POLICY_FILE) store.watch();
  log.info({ policy: policy.source }, 'policy in force');
  return store;
}
