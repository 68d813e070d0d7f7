import type { PlatformDirectory } from '../../core/platform-rules.ts';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import { transaction, type Pool, type PoolClient } from '../../db/pool.ts';
import { runTurn, type TurnContext, type TurnDeps, type TurnOutcome } from '../../agent/loop.ts';
import { admitArgs } from '../../agent/tools/tool.ts';
import { RUN_COMMAND } from '../../agent/tools/run-command.ts';
import type { ExternalRun, TurnWorkspaces } from '../turn-workspaces.ts';
import type { CallRuling, GrantUse } from '../../agent/call-ruling.ts';
import { lockFollowUps, takeFollowUps } from '../follow-ups.ts';
import type { ModelProvider } from '../../agent/model.ts';
import type { ModelSpend } from '../../agent/model-spend.ts';
import type { ToolRegistry } from '../../agent/tools/registry.ts';
import type { TurnState } from '../../agent/turn-state.ts';
import { checkpointFromRow } from '../../agent/turn-store.ts';
import { ZERO_USAGE } from '../../agent/model.ts';
import type { OutboundRegistry } from '../../reply/outbound.ts';
import type { ReplyButton } from '../../core/reply-target.ts';
import { ReplyStream } from '../../reply/reply-stream.ts';
import { parkedTurnContinuedBy, recordPlaceholder, settleTurn, startTurn, type StartedRow } from '../turn-lifecycle.ts';
import type { TurnEvents } from '../turn-events.ts';
import { type CallDecision, type WorkItem } from '../../core/work-item.ts';
import type { Requester } from '../../core/person.ts';
import type { JobHandler } from './job.ts';
import type { WorkItemJobPayload } from './turn-job.ts';
import type { Attachment, Message, ToolCall } from '../../agent/messages.ts';
import type { WorkerLiveness } from '../worker-liveness.ts';
import { stopRequestOf, type StopListener } from '../stop-requests.ts';
import { stopButtonValue } from '../../core/buttons.ts';
import {
  endingOfError,
  endingOfOutcome,
  HandOver,
  settleEnding,
  type ReplyOutbox,
  type TurnEnding,
} from './turn-endings.ts';
import { historyOf, historyRowsToRead } from './turn-history.ts';
import { SpanKind, withSpan } from '../../telemetry/spans.ts';

/** How a turn that wants approval is parked, and how a continuation picks it up (src/approval). */
interface TurnApprovals {
  /** The state a continuation resumes from, with the decided calls' results applied; or a refusal to show. */
  resume(item: WorkItem, log: Logger): Promise<{ state: TurnState } | { refused: string }>;
  /** Stores the envelope (with the checkpoint) and schedules its card, inside the parking transaction. */
  park(client: PoolClient, item: WorkItem, state: TurnState): Promise<void>;
  /** Audits what happened to a decided call once the continuation ran (or denied) it. */
  recordOutcome(envelopeId: string, call: ToolCall, decision: CallDecision, isError: boolean): Promise<void>;
  /** The policy's outcome for a call with valid arguments: run it, refuse it, or park it for a person. */
  rule(item: WorkItem, call: ToolCall): Promise<CallRuling>;
  /** Audits a call a rule let run, or refused, without a card. */
  recordRuling(item: WorkItem, call: ToolCall, ruling: CallRuling): Promise<void>;
  /** A standing grant that lets a call which would wait for a person run now, claimed for it. */
  useGrant?(item: WorkItem, call: ToolCall): Promise<GrantUse | undefined>;
}

export interface WorkerServices {
  pool: Pool;
  config: Config;
  provider: ModelProvider;
  tools: ToolRegistry;
  outbounds: OutboundRegistry;
  log: Logger;
  events: TurnEvents;
  liveness: WorkerLiveness;
  systemPrompt(item: WorkItem): string;
  /** What each platform can show (its adapter's rules). */
  platforms: PlatformDirectory;
  approvals: TurnApprovals;
  /** Aborted when this process must stop working at once (declared dead by its peers). */
  fence: AbortSignal;
  /** Stop requests (Stop button, Ctrl-C) for turns running in this process. */
  stops: StopListener;
  /** Aborted when this process begins a graceful shutdown: turns hand over at their next checkpoint. */
  draining: AbortSignal;
  /** Where a conversation that works on a repository works (src/repos); absent: no repositories. */
  workspaces?: TurnWorkspaces;
  /**
   * Before each turn: what the model should know of the requester's own connections (per-person MCP
   * servers, src/connections), once their tools are listed; absent: none configured.
   */
  connectionsNote?(item: WorkItem): Promise<string | undefined>;
  /**
   * Where a finished turn's last text goes when showing it would wait for the platform's budget, so
   * the slot is freed when the computation ends (src/reply/outbox-deliverer.ts); absent: shown in the turn.
   */
  outbox?: ReplyOutbox;
  /**
   * The turn's spend limits (src/budgets): its model calls reserve and settle against them, and a
   * warning is posted in the conversation with `notify`; absent or undefined: no budget applies.
   */
  spend?(
    item: WorkItem,
    log: Logger,
    notify: (text: string, buttons?: ReplyButton[]) => Promise<void>,
  ): ModelSpend | undefined;
  /**
   * When a turn starts: the files sent with its message, downloaded, checked and saved (src/files),
   * as a note for the prompt and the images or documents the model is shown (an empty note: the
   * message had none after all); absent: files are named only.
   */
  receiveFiles?(item: WorkItem, log: Logger): Promise<{ note: string; attachments: Attachment[] }>;
  /** Saves a tool result too long for the model in the conversation's workspace (src/files); returns its path. */
  keepToolOutput?(item: WorkItem, call: ToolCall, text: string): Promise<string>;
}

export function initialTurnState(item: WorkItem): TurnState {
  const asked: Message[] = item.input.prompt !== undefined ? [{ role: 'user', text: item.input.prompt }] : [];
  const { call } = item.input;
  return {
    ...(call ? { commandCall: true } : {}),
    round: 0,
    // A command's call stands where the model's would: one id per work item, so a replay finds it run.
    messages: call
      ? [...asked, { role: 'assistant', text: '', toolCalls: [{ id: `command-${item.id}`, ...call }] }]
      : asked,
    emptyRetries: 0,
    usage: { ...ZERO_USAGE },
    reply: { messageIds: item.reply.messageId ? [item.reply.messageId] : [], sealed: [], carry: '' },
    text: '',
    final: false,
    pendingApproval: [],
  };
}

/**
 * The handler of both turn tasks (tasks/interactive-turn.ts, tasks/background-turn.ts): runs one work
 * item (a turn or a continuation) to a resting point.
 */
export function createWorkItemTask(services: WorkerServices): JobHandler<WorkItemJobPayload> {
  const { pool, config } = services;
  return async ({ workItemId }, helpers) => {
    services.events.emit('jobStarted', { workItemId });
    if (helpers.job.locked_by) await services.liveness.claimSlot(helpers.job.locked_by);
    // Tracked before the item is read: a stop request committed after the read below is notified
    // to a tracked turn, and one committed before it is in the row. So the first round needs no
    // separate check.
    const stop = services.stops.track(workItemId);
    try {
      const started = await startTurn(pool, workItemId, historyRowsToRead(config));
      // Already at rest: a replay of a job whose item finished before the job was marked complete.
      if (!started) return;
      const { row } = started;
      await withSpan(`run ${started.item.type}`, runSpan(started.item, row, helpers.job), async () => {
        const item = await withPlaceholder(services, started.item, row);
        services.events.emit('started', { item, attempt: row.attempts });
        await runItem(services, { item, row, stop, jobSignal: helpers.abortSignal });
      });
    } finally {
      stop.release();
    }
  };
}

/**
 * One attempt's span, continuing the trace its item carries (the enqueue's, or the approval wait's
 * for a continuation): which worker ran it and which attempt it was.
 */
function runSpan(item: WorkItem, row: StartedRow, job: { id: string; locked_by: string | null }) {
  return {
    kind: SpanKind.CONSUMER,
    parent: item.payload,
    conversationId: item.conversationId,
    attributes: {
      'countersign.work_item.id': item.id,
      'countersign.work_item.type': item.type,
      'countersign.conversation.id': item.conversationId,
      'countersign.attempt': row.attempts,
      'countersign.job.id': job.id,
      ...(job.locked_by ? { 'countersign.worker.id': job.locked_by } : {}),
      ...(item.input.approval ? { 'countersign.approval.envelope_id': item.input.approval.envelopeId } : {}),
    },
  };
}

/** A started work item, as the job hands it to `runItem`. */
interface StartedItem {
  item: WorkItem;
  row: StartedRow;
  stop: TrackedStop;
  /** graphile-worker's signal for this job (shutdown after the grace period). */
  jobSignal: AbortSignal | undefined;
}

type TrackedStop = ReturnType<StopListener['track']>;

/**
 * Posts the item's placeholder when its reply has no message yet, and records the message's id
 * on the item before the turn starts, so a replay streams into the same message. A crash between
 * the post and the update would leave a stray placeholder; where the platform can find a post again
 * (`Outbound.postTagged`), a later attempt takes that message instead of posting another. A failed
 * post fails the job, which graphile-worker retries — the message itself is never lost.
 */
async function withPlaceholder(services: WorkerServices, item: WorkItem, row: StartedRow): Promise<WorkItem> {
  if (!item.placeholder || item.reply.messageId || row.checkpoint) return item;
  const outbound = services.outbounds.for(item.reply);
  // Not the first attempt: an earlier one may have posted the placeholder and died before recording it.
  const posted = outbound.postTagged
    ? await outbound.postTagged(item.reply, item.placeholder, item.id, row.attempts > 1)
    : await outbound.post(item.reply, item.placeholder);
  return recordPlaceholder(services.pool, item, posted.messageId);
}

/** Runs the loop on a started item and settles how it ended (src/queue/tasks/turn-endings.ts). */
async function runItem(services: WorkerServices, { item, row, stop, jobSignal }: StartedItem): Promise<void> {
  const log = services.log.child({ workItemId: item.id, conversationId: item.conversationId });
  const signal = AbortSignal.any([jobSignal ?? new AbortController().signal, services.fence, stop.signal]);
  const startedAt = Date.now();
  const checkStop = stopChecker(services.pool, item, stop);
  if (row.stopped_by) stop.abort(row.stopped_by);

  const after = await parkedTextFirst(services, item);
  const state = await startingState(services, item, row, log, after);
  if (!state) return;
  const sink = liveReply(services, item, state, log, after);
  let ending: TurnEnding;
  try {
    const workspace = (await services.workspaces?.prepare(item, log)) ?? { kind: 'none' };
    if (workspace.kind === 'refused') {
      ending = { kind: 'failure', error: new Error(workspace.text), reason: workspace.text, refused: true };
    } else {
      const history = await historyOf(services.pool, services.config, item, row, log);
      const tools =
        workspace.kind === 'repository' && workspace.offers ? services.tools.only(workspace.offers) : undefined;
      const deps = turnDeps(services, { item, log, sink, signal, checkStop, ...(tools ? { tools } : {}) });
      const notes = [
        workspace.kind === 'repository' ? workspace.systemNote : '',
        (await services.connectionsNote?.(item).catch(() => undefined)) ?? '',
      ];
      const context = turnContext(services, item, history, notes.filter(Boolean).join('\n\n'));
      const external = workspace.kind === 'repository' && state.round === 0 ? workspace.external : undefined;
      const outcome = external
        ? await runExternally(external, state, sink, signal, spendOf(services, item, log).spend)
        : await runTurn(context, state, deps);
      // A turn that parks leaves its writes uncommitted: who is behind them is recorded now.
      if (outcome.kind === 'awaiting_approval') await services.workspaces?.recordWrites(item, log);
      ending = endingOfOutcome(await withChangeCard(services, item, outcome, log));
    }
  } catch (error) {
    // So does one that stops or fails: whatever it wrote is its requester's, whoever commits it later.
    await services.workspaces?.recordWrites(item, log).catch((recordError: unknown) => {
      log.error({ err: recordError }, 'could not record the authors of the worktree’s changes');
    });
    ending = await endingOfError(error, signal, services.pool, log).catch(async (retried: unknown) => {
      // The job is tried again from its checkpoint: this attempt's stream must not post later.
      await sink.handOff().catch(() => undefined);
      throw retried;
    });
  }
  await settleEnding(
    {
      pool: services.pool,
      events: services.events,
      log,
      item,
      sink,
      state,
      startedAt,
      feedbackButtons: services.config.FEEDBACK_BUTTONS,
      platform: services.platforms.rulesOf(item.reply.platform),
      park: (client, parkedItem, parkedState) => services.approvals.park(client, parkedItem, parkedState),
      ...(services.outbox ? { outbox: services.outbox } : {}),
      ...(after ? { after: after.workItemId } : {}),
    },
    ending,
  );
}

/** A parked turn whose text may still wait in the reply outbox, and the wait for it to show. */
interface ParkedTextFirst {
  workItemId: string;
  showAfter(signal: AbortSignal): Promise<void>;
}

/**
 * For a continuation: the parked turn it carries on, whose text (written to the outbox when it
 * parked) must be visible before the continuation shows anything. The continuation replies below
 * the card, in messages of its own; without this wait, a park text still waiting for the platform's
 * budget would land after the continuation's reply.
 */
async function parkedTextFirst(services: WorkerServices, item: WorkItem): Promise<ParkedTextFirst | undefined> {
  const { outbox } = services;
  if (!item.input.approval || !outbox) return undefined;
  const parked = await parkedTurnContinuedBy(services.pool, item);
  if (!parked) return undefined;
  return { workItemId: parked, showAfter: (signal) => outbox.awaitDelivered(parked, signal) };
}

/**
 * Checks for a stop request before every round but the first. The stop request was read with the
 * item; later ones come by notification, and are also checked for before every further round (in
 * case a notification was missed).
 */
function stopChecker(pool: Pool, item: WorkItem, stop: TrackedStop): () => Promise<void> {
  let stopChecked = true;
  return async () => {
    if (stopChecked) {
      stopChecked = false;
      return;
    }
    const by = await stopRequestOf(pool, item.id);
    if (by) stop.abort(by);
  };
}

/**
 * The state the turn runs from: its checkpoint, the decided calls of a continuation, or a fresh
 * start. Undefined when a continuation is refused: the refusal is shown and the item settled.
 */
async function startingState(
  services: WorkerServices,
  item: WorkItem,
  row: StartedRow,
  log: Logger,
  after: ParkedTextFirst | undefined,
): Promise<TurnState | undefined> {
  const checkpoint = checkpointFromRow(row.checkpoint_version, row.checkpoint);
  if (checkpoint) return checkpoint;
  if (!item.input.approval) return withFiles(services, item, initialTurnState(item), log);
  const resumed = await services.approvals.resume(item, log);
  if (!('refused' in resumed)) return resumed.state;
  await refuseContinuation(services, item, resumed.refused, log, after);
  return undefined;
}

/**
 * Shows a refused continuation's reason and settles it failed. Like a turn's ending, the text goes
 * through the reply outbox where the platform has a budget: it waits for the parked turn's text
 * first (`after`), and that wait, behind the budget, must hold no worker slot (nor keep a shutdown
 * waiting for the job).
 */
async function refuseContinuation(
  services: WorkerServices,
  item: WorkItem,
  refused: string,
  log: Logger,
  after: ParkedTextFirst | undefined,
): Promise<void> {
  const { outbox, pool } = services;
  const sink = new ReplyStream(services.outbounds.for(item.reply), item.reply, {
    log,
    ...(after ? { showAfter: after.showAfter } : {}),
  });
  const replyState = outbox ? await sink.handOff() : undefined;
  if (!outbox || !replyState) {
    await sink.finish(refused);
    // Puts the work item into a resting status and hands the conversation to its next item (one statement).
    await settleTurn(pool, item, { status: 'failed', error: refused });
    services.events.emit('failed', { item, error: refused });
    return;
  }
  const row = await transaction(pool, async (client) => {
    await settleTurn(client, item, { status: 'failed', error: refused });
    return outbox.write(client, {
      workItemId: item.id,
      target: item.reply,
      replyState,
      text: refused,
      buttons: [],
      announce: { event: 'failed', item, error: refused },
      ...(after ? { afterWorkItemId: after.workItemId } : {}),
    });
  });
  outbox.deliver(row);
}

/**
 * The message's files joined to its first user message: the note after the person's text, the images
 * and documents beside it. Done by the worker, not the ingress, so an ack never waits for a download;
 * a file that fails leaves its line in the note and the text is answered all the same.
 */
async function withFiles(services: WorkerServices, item: WorkItem, state: TurnState, log: Logger): Promise<TurnState> {
  const files = item.input.files ?? [];
  if (files.length === 0 && !item.input.filesOfMessage) return state;
  const intake = services.receiveFiles
    ? await services.receiveFiles(item, log)
    : {
        note: files.length
          ? `Files sent with this message (not read here): ${files.map((f) => JSON.stringify(f.name)).join(', ')}`
          : '',
        attachments: [],
      };
  // A message looked up for files it turned out not to have.
  if (!intake.note) return state;
  const first = state.messages[0];
  const text = first?.role === 'user' && first.text ? `${first.text}\n\n${intake.note}` : intake.note;
  const message: Message = {
    role: 'user',
    text,
    ...(intake.attachments.length ? { attachments: intake.attachments } : {}),
  };
  return {
    ...state,
    messages: first?.role === 'user' ? [message, ...state.messages.slice(1)] : [message, ...state.messages],
  };
}

/** The reply the turn streams into, with its Stop button, reporting when its first text is visible; a continuation's shows nothing before its parked turn's text. */
function liveReply(
  services: WorkerServices,
  item: WorkItem,
  state: TurnState,
  log: Logger,
  after: ParkedTextFirst | undefined,
): ReplyStream {
  let firstText = true;
  return new ReplyStream(services.outbounds.for(item.reply), item.reply, {
    log,
    ...(after ? { showAfter: after.showAfter } : {}),
    initial: state.reply,
    liveButtons: [{ label: 'Stop', value: stopButtonValue(item.id), style: 'danger' }],
    liveButtonsAfterMs: services.config.STOP_BUTTON_AFTER_MS,
    onDelivered: () => {
      if (firstText) {
        firstText = false;
        services.events.emit('firstVisibleText', { item, latencyMs: Date.now() - Date.parse(item.createdAt) });
      }
    },
  });
}

function turnContext(services: WorkerServices, item: WorkItem, history: Message[], workspaceNote: string): TurnContext {
  const system = services.systemPrompt(item);
  return {
    workItemId: item.id,
    conversationId: item.conversationId,
    requester: item.requester,
    reply: item.reply,
    system: workspaceNote ? `${system}\n\n${workspaceNote}` : system,
    history,
  };
}

/**
 * An external coding CLI's run as a turn's outcome: its progress shown as the status line, its
 * summary the answer (or a budget's refusal, when the run did not fit: it never started). Not
 * checkpointed: a retried job runs it again in the same worktree.
 */
async function runExternally(
  run: ExternalRun,
  state: TurnState,
  sink: ReplyStream,
  signal: AbortSignal,
  spend: ModelSpend | undefined,
): Promise<TurnOutcome> {
  const result = await run((markdown) => sink.setStatus(markdown.split('\n')[0]?.slice(0, 200)), signal, spend);
  sink.setStatus(undefined);
  signal.throwIfAborted();
  const text =
    'refused' in result
      ? result.refused
      : result.text.trim() || (result.failed ? 'The coding agent failed without output.' : 'Done.');
  return {
    kind: 'final',
    text,
    state: { ...state, messages: [...state.messages, { role: 'assistant', text, toolCalls: [] }], text, final: true },
  };
}

/**
 * A turn of a conversation that works on a repository ends with its changes committed and, when its
 * branch holds commits the base does not, parked on the change card's merge call: approving it
 * merges, denying it discards (docs/code-work.md).
 */
async function withChangeCard(
  services: WorkerServices,
  item: WorkItem,
  outcome: TurnOutcome,
  log: Logger,
): Promise<TurnOutcome> {
  if (outcome.kind !== 'final' || !services.workspaces) return outcome;
  const call = await services.workspaces.changeToPropose(
    item,
    outcome.text,
    (argv) => testsUnderPolicy(services, item, argv, log),
    log,
  );
  if (!call) return outcome;
  // The same change was decided in this turn already (it conflicted, or could not land): the answer
  // says why; asking again at once would show the same card for the same outcome.
  const sameChange = (c: ToolCall) => c.name === call.name && c.args.sha === call.args.sha;
  const asked = outcome.state.messages.some((m) => m.role === 'assistant' && m.toolCalls.some(sameChange));
  if (asked) return outcome;
  const state = structuredClone(outcome.state);
  const last = state.messages.at(-1);
  if (last?.role === 'assistant') last.toolCalls = [...last.toolCalls, call];
  else state.messages.push({ role: 'assistant', text: outcome.text, toolCalls: [call] });
  return { kind: 'awaiting_approval', calls: [call], state: { ...state, final: false, pendingApproval: [call] } };
}

/** How much of a test run's output a change card shows. */
const TEST_OUTPUT_CHARS = 600;
/** How much of the policy's reason for not running the tests a change card shows. */
const TEST_WHY_CHARS = 1_500;

/**
 * The repository's test command, run as a `run_command` call under the policy: only when a rule lets
 * it run without a card (the change card is the one card of a code turn); otherwise the card says why not.
 */
async function testsUnderPolicy(
  services: WorkerServices,
  item: WorkItem,
  argv: string[],
  log: Logger,
): Promise<string> {
  const shown = `\`${argv.join(' ')}\``;
  const tool = services.tools.get(RUN_COMMAND);
  if (!tool) return `${shown} not run: running programs is off here (ENABLE_RUN_COMMAND=false).`;
  const call: ToolCall = { id: `tests-${item.id}`, name: RUN_COMMAND, args: { command: argv } };
  const ruling = await services.approvals.rule(item, call);
  // The same decision as any program run: with content only one person vouched for in the worktree
  // (a received file, a program's output) the taint asks for a countersignature, and the card says so.
  if (ruling.outcome !== 'allow') {
    const why = ruling.message
      ? `: ${ruling.message.slice(0, TEST_WHY_CHARS)}`
      : ' (a policy rule can allow it; docs/code-work.md)';
    return `${shown} not run: the policy ${ruling.outcome === 'deny' ? 'refuses it' : ruling.outcome === 'countersign' ? 'needs a second person to countersign it' : 'asks before running it'}${why}.`;
  }
  await services.approvals.recordRuling(item, call, ruling);
  const admitted = admitArgs(tool, call.args);
  if (!admitted.ok) return `${shown} not run: ${admitted.problem}`;
  try {
    const output = await tool.execute(admitted.args, {
      workItemId: item.id,
      conversationId: item.conversationId,
      requester: item.requester,
      signal: AbortSignal.timeout(services.config.TOOL_TIMEOUT_SECONDS * 1000),
      log,
    });
    const content = typeof output === 'string' ? output : output.content;
    const failed = typeof output !== 'string' && output.isError === true;
    const tail = content.length > TEST_OUTPUT_CHARS ? `…${content.slice(-TEST_OUTPUT_CHARS)}` : content;
    return `${shown} ${failed ? 'FAILED' : 'passed'}:\n${tail}`;
  } catch (error) {
    return `${shown} could not run: ${(error as Error).message}`;
  }
}

/** What one run of the loop is given besides the services. */
interface RunningTurn {
  /** The tools this turn is offered, when not all of them (a review's). */
  tools?: ToolRegistry;
  item: WorkItem;
  log: Logger;
  sink: ReplyStream;
  signal: AbortSignal;
  checkStop: () => Promise<void>;
}

/** The loop's dependencies: the model and tools, and the hooks the queue and the approval gate answer. */
function turnDeps(services: WorkerServices, { item, log, sink, signal, checkStop, tools }: RunningTurn): TurnDeps {
  const { config, approvals } = services;
  /** The makers of the standing grants that let this turn's calls run, by call id. */
  const grantedBy = new Map<string, Requester>();
  return {
    db: services.pool,
    provider: services.provider,
    tools: tools ?? services.tools,
    sink,
    settings: {
      maxRounds: config.AGENT_MAX_ROUNDS,
      emptyRoundRetries: config.AGENT_EMPTY_ROUND_RETRIES,
      maxTokens: config.AGENT_MAX_TOKENS,
      toolResultMaxTokens: config.TOOL_RESULT_MAX_TOKENS,
      toolTimeoutSeconds: config.TOOL_TIMEOUT_SECONDS,
    },
    log,
    signal,
    beforeRound: async (round) => {
      await checkStop();
      if (services.draining.aborted) throw new HandOver(round);
    },
    rule: (call) => approvals.rule(item, call),
    onRuled: (call, ruling) => approvals.recordRuling(item, call, ruling),
    useGrant: async (call) => {
      const grant = await approvals.useGrant?.(item, call);
      if (grant?.grantedBy) grantedBy.set(call.id, grant.grantedBy);
      return grant;
    },
    followUps: followUpsOf(services, item, log),
    ...(services.keepToolOutput
      ? { keepFullOutput: (call: ToolCall, text: string) => services.keepToolOutput!(item, call, text) }
      : {}),
    ...spendOf(services, item, log),
    ...(services.workspaces ? { afterToolRun: writesRecorder(services.workspaces, item, log, grantedBy) } : {}),
    onDecidedCall: async (call, decision, result) => {
      const envelopeId = item.input.approval?.envelopeId;
      if (envelopeId) await approvals.recordOutcome(envelopeId, call, decision, result.isError);
    },
  };
}

/** Tool kinds that never write a file: no scan of the worktree after them. */
const CANNOT_WRITE: ReadonlySet<string> = new Set(['read', 'question', 'share', 'merge', 'schedule']);

/**
 * After each tool call that may write: its writes recorded for the turn's requester, and for the
 * person whose click let it run (who may countersign a merge, docs/policy.md).
 */
function writesRecorder(
  workspaces: TurnWorkspaces,
  item: WorkItem,
  log: Logger,
  grantedBy: ReadonlyMap<string, Requester>,
): NonNullable<TurnDeps['afterToolRun']> {
  return async (call, tool, outcome) => {
    if (tool.kind && CANNOT_WRITE.has(tool.kind)) return;
    const { approval } = item.input;
    const approvedBy =
      outcome === 'approved'
        ? (approval?.approvers?.find((a) => a.toolCallId === call.id)?.by ?? approval?.decidedBy)
        : outcome === 'grant'
          ? grantedBy.get(call.id)
          : undefined;
    // A program (run_command, an application's tool of unknown kind) may leave a process that
    // writes later, seen only at another turn's scan: its people stand behind the whole change.
    const ranProgram = tool.kind === undefined || tool.kind === 'exec';
    await workspaces.recordWrites(item, log, { ...(approvedBy ? { approvedBy } : {}), ranProgram });
  };
}

/** The turn's spend limits, if any apply; their warning is a message of its own in the conversation. */
function spendOf(services: WorkerServices, item: WorkItem, log: Logger): { spend?: ModelSpend } {
  const notify = async (text: string, buttons?: ReplyButton[]) =>
    void (await services.outbounds.for(item.reply).post(item.reply, text, buttons ? { buttons } : undefined));
  const spend = services.spend?.(item, log, notify);
  return spend ? { spend } : {};
}

/**
 * The conversation's newer messages at a safe point (docs/conversations.md). `steer` and
 * `collect` take them into the turn — in the transaction that saves the checkpoint holding
 * them, so each is read exactly once whatever dies when — and `interrupt` stops the turn.
 */
function followUpsOf(services: WorkerServices, item: WorkItem, log: Logger): NonNullable<TurnDeps['followUps']> {
  const { pool, config } = services;
  const mode = item.input.approval ? 'queue' : (item.mode ?? 'queue');
  let collected = false;
  const take = async (current: TurnState, how: 'append' | 'merge'): Promise<number> => {
    const readFiles = services.receiveFiles && ((next: WorkItem) => services.receiveFiles!(next, log));
    const taken = await takeFollowUps(pool, item, mode, current, how, readFiles);
    if (taken > 0) log.info({ taken, how }, 'newer messages joined the turn');
    return taken;
  };
  return async (current, at) => {
    if (mode === 'queue') return 'none';
    if (mode === 'interrupt') {
      if (at === 'final') return 'none';
      const waiting = await lockFollowUps(pool, item);
      return waiting.some((f) => f.mode === 'interrupt') ? 'superseded' : 'none';
    }
    if (mode === 'collect' && !collected && current.round === 0) {
      collected = true;
      // A burst: wait until a window passes without a new line, then read the lines as one message.
      for (let i = 0; i < 10; i++) {
        await new Promise((r) => setTimeout(r, config.CONVERSATION_COLLECT_WINDOW_MS));
        if ((await take(current, 'merge')) === 0) break;
      }
      return 'steered';
    }
    return (await take(current, 'append')) > 0 ? 'steered' : 'none';
  };
}
