import type { PlatformDirectory } from '../core/platform-rules.ts';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Pool } from '../db/pool.ts';
import { createProvider } from '../agent/providers/index.ts';
import { traced } from '../agent/providers/traced.ts';
import type { ModelProvider } from '../agent/model.ts';
import { buildSystemPrompt } from '../agent/system-prompt.ts';
import type { ApprovalService } from '../approval/service.ts';
import type { OutboundRegistry } from '../reply/outbound.ts';
import { skillsPromptSection, type SkillRegistry } from '../skills/index.ts';
import { startQueueRunner, type QueueRunner } from '../queue/runner.ts';
import { createWorkItemTask } from '../queue/tasks/run-work-item.ts';
import type { Requester } from '../core/person.ts';
import type { WorkItem } from '../core/work-item.ts';
import type { TurnEvents } from '../queue/turn-events.ts';
import { WorkerLiveness } from '../queue/worker-liveness.ts';
import { StopListener } from '../queue/stop-requests.ts';
import type { Cleanups } from './cleanups.ts';
import { jobTasks } from './jobs.ts';
import type { AgentTools } from './tools.ts';
import type { CodeWork } from './repos.ts';
import { connectionsNoteOf } from './connections.ts';
import { startScheduler } from './schedules.ts';
import { fileReceiver, toolOutputKeeper } from './files.ts';
import type { PersonalConnections } from '../connections/service.ts';
import { OutboxDeliverer } from '../reply/outbox-deliverer.ts';
import { announceVisible } from '../queue/tasks/turn-endings.ts';
import { BudgetLeases, SpendLimits } from '../budgets/index.ts';
import { loadPriceTable } from '../usage/model-prices.ts';

/** Characters of the system prompt given to the list of skills (names and descriptions only). */
const SKILLS_PROMPT_BUDGET = 4000;

/** What the worker pools run turns with. */
interface WorkerWiring {
  config: Config;
  /** The process role (all or worker), recorded with this process's heartbeat. */
  role: string;
  databaseUrl: string;
  pool: Pool;
  log: Logger;
  events: TurnEvents;
  agentTools: AgentTools;
  skills: SkillRegistry;
  outbounds: OutboundRegistry;
  approvals: ApprovalService;
  /** What each platform is called and can show (its adapter's rules). */
  platforms: PlatformDirectory;
  /** Replaces the configured model (tests, benchmarks). */
  provider?: ModelProvider;
  /** Called when the worker pools die on their own: the process should stop and be restarted. */
  onFatal(error: unknown): void;
  /** Code work, where repositories are configured: worktrees around turns, and their sweep. */
  codeWork?: CodeWork;
  /** Per-person MCP servers' connections, where any is configured. */
  connections?: PersonalConnections;
}

/** What stops or redirects the turns this process runs. */
interface TurnControls {
  liveness: WorkerLiveness;
  stops: StopListener;
  /** Aborted when peers declare this worker dead. */
  fence: AbortController;
  /** Aborted when this process begins a graceful shutdown. */
  draining: AbortController;
  /** Delivers the reply outbox: finished turns' texts, apart from the slots that computed them. */
  outbox: OutboxDeliverer;
  /** This process's leases on roomy budgets (src/budgets/leases.ts): they end with its heartbeat. */
  leases: BudgetLeases;
}

/** Starts the worker pools (roles all and worker): turns, approval cards and housekeeping. */
export async function startWorker(wiring: WorkerWiring, cleanups: Cleanups): Promise<QueueRunner> {
  const { config, log } = wiring;
  // Every round a `chat` span (src/agent/providers/traced.ts); a no-op while nothing is traced.
  const provider = traced(wiring.provider ?? createProvider(config, log));
  const controls = await startTurnControls(wiring, cleanups);
  const runner = await startQueueRunner({
    connectionString: wiring.databaseUrl,
    log,
    interactiveConcurrency: config.WORKER_CONCURRENCY,
    backgroundConcurrency: config.BACKGROUND_CONCURRENCY,
    expressConcurrency: config.EXPRESS_CONCURRENCY,
    deliveryConcurrency: config.DELIVERY_CONCURRENCY,
    pollIntervalMs: config.WORKER_POLL_INTERVAL_MS,
    shutdownGraceMs: config.SHUTDOWN_GRACE_SECONDS * 1000,
    tasks: jobTasks({ ...wiring, outbox: controls.outbox, runWorkItem: workItemTask(wiring, provider, controls) }),
    // The process leaves (src/cli.ts): stopping waits for running turns (aborting them after the
    // grace period, as graphile-worker does), then releases their locks for a live worker.
    onFatal: (error) => wiring.onFatal(error),
    onPoolCreated: (poolId) => {
      controls.liveness
        .claimSlot(poolId)
        .catch((error: unknown) => log.warn({ err: error }, 'could not record worker pool'));
    },
  });
  cleanups.add(async () => {
    // Turns hand over at their next checkpoint; graphile-worker aborts what is left after the grace period.
    controls.draining.abort();
    await runner.stop();
  });
  // Stopped before the pools (cleanups run newest first): no run is enqueued while they drain.
  startScheduler(wiring, cleanups);
  log.info(
    { provider: provider.name, model: provider.model, concurrency: config.WORKER_CONCURRENCY, role: wiring.role },
    'worker started',
  );
  return runner;
}

/** This worker's heartbeat (and the fence it trips when declared dead) and its stop-request listener. */
async function startTurnControls(wiring: WorkerWiring, cleanups: Cleanups): Promise<TurnControls> {
  const { config, log } = wiring;
  const fence = new AbortController();
  const liveness = new WorkerLiveness({
    pool: wiring.pool,
    log,
    role: wiring.role,
    heartbeatSeconds: config.WORKER_HEARTBEAT_SECONDS,
    deadAfterSeconds: config.WORKER_DEAD_AFTER_SECONDS,
    onFenced: () => fence.abort(new Error('this worker was declared dead by its peers')),
  });
  await liveness.start();
  cleanups.add(() => liveness.stop());
  const draining = new AbortController();
  const stops = new StopListener(wiring.databaseUrl, log);
  await stops.start();
  cleanups.add(() => stops.close());
  const outbox = new OutboxDeliverer({
    pool: wiring.pool,
    outbounds: wiring.outbounds,
    log,
    processId: liveness.processId,
    // At the heartbeat's pace: a killed process's rows become claimable when a heartbeat's sweep
    // removes it, so its replies are taken over as soon as its turns are.
    pollMs: config.WORKER_HEARTBEAT_SECONDS * 1000,
    onDelivered: (row) => announceVisible(wiring.events, row.announce),
  });
  outbox.start();
  // Stopped after the worker pools (cleanups run newest first), which may still hand it replies.
  cleanups.add(() => outbox.stop());
  const leases = new BudgetLeases({
    pool: wiring.pool,
    processId: liveness.processId,
    log,
    callsPerLease: config.BUDGET_LEASE_CALLS,
  });
  // Like the outbox: after the worker pools, whose last calls settle into the leases.
  cleanups.add(() => leases.close());
  return { liveness, stops, fence, draining, outbox, leases };
}

function workItemTask(wiring: WorkerWiring, provider: ModelProvider, controls: TurnControls) {
  const { config, skills } = wiring;
  const { tools, catalog } = wiring.agentTools;
  // The skills list changes only when a skill file does (the registry's version): built once per version.
  let cached: { version: string; text: string } | undefined;
  const skillsSection = () => {
    const version = skills.version();
    if (cached?.version !== version) cached = { version, text: skillsPromptSection(skills, SKILLS_PROMPT_BUDGET) };
    return cached.text;
  };
  return createWorkItemTask({
    pool: wiring.pool,
    config,
    provider,
    tools,
    outbounds: wiring.outbounds,
    log: wiring.log,
    events: wiring.events,
    liveness: controls.liveness,
    fence: controls.fence.signal,
    stops: controls.stops,
    draining: controls.draining.signal,
    outbox: controls.outbox,
    approvals: wiring.approvals,
    systemPrompt: (item) =>
      buildSystemPrompt({
        agentName: config.AGENT_NAME,
        platformName: wiring.platforms.rulesOf(item.reply.platform).displayName,
        sections: [skillsSection(), ...catalog.promptNotes],
      }),
    platforms: wiring.platforms,
    ...(wiring.codeWork ? { workspaces: wiring.codeWork.turns } : {}),
    ...(wiring.connections ? { connectionsNote: connectionsNoteOf(wiring.connections, catalog) } : {}),
    spend: spendLimitsOf(wiring, controls.leases),
    receiveFiles: fileReceiver(config, wiring.outbounds, wiring.codeWork?.rootOf),
    keepToolOutput: toolOutputKeeper(config, wiring.codeWork?.rootOf),
  });
}

/** The policy's budgets (docs/budgets.md), counted at MODEL_PRICES_FILE's prices over the built-in ones. */
function spendLimitsOf(wiring: WorkerWiring, leases: BudgetLeases) {
  const limits = new SpendLimits({
    pool: wiring.pool,
    leases,
    prices: loadPriceTable(wiring.config.MODEL_PRICES_FILE),
    budgetsFor: (item) => wiring.approvals.budgetsFor(item.requester, item.reply),
    unknownGroups: {
      // As if in every group a budget names: the budgets that may cover someone whose groups are unknown.
      budgetsIfInGroups: ({ requester, reply }) =>
        wiring.approvals.budgetsFor(
          { ...requester, groups: [...(requester.groups ?? []), ...wiring.approvals.budgetGroups(requester.platform)] },
          reply,
        ),
      lookUp: (item) => groupsNow(wiring.outbounds, item),
    },
  });
  return limits.forTurn.bind(limits);
}

/**
 * The requester with the groups the platform says now, for budgets (the way a scheduled run looks
 * its owner up): in a Discord DM the roles of every server the bot shares with them; elsewhere the
 * groups where they spoke. No longer a member there: in no group.
 */
async function groupsNow(outbounds: WorkerWiring['outbounds'], item: WorkItem): Promise<Requester> {
  const { requester, reply } = item;
  const outbound = outbounds.for(reply);
  if (outbound.groupsAnywhere && !reply.workspace)
    return { ...requester, groups: await outbound.groupsAnywhere(requester) };
  const now = outbound.personNow ? await outbound.personNow(requester, reply) : requester;
  const { groups: _told, ...rest } = requester;
  return now?.groups?.length ? { ...rest, groups: now.groups } : rest;
}
