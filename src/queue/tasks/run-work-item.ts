import type { Task } from 'graphile-worker';
import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Pool, PoolClient } from '../../db/pool.ts';
import { isDatabaseUnavailable, waitForDatabase } from '../../db/errors.ts';
import { runTurn, Superseded, type CallRuling, type GrantUse, type TurnOutcome } from '../../agent/loop.ts';
import { lockFollowUps, takeFollowUps } from '../follow-ups.ts';
import type { ModelProvider } from '../../agent/model.ts';
import type { ToolRegistry } from '../../agent/tools/registry.ts';
import type { TurnState } from '../../agent/turn-state.ts';
import { checkpointFromRow } from '../../agent/turn-store.ts';
import { prepareHistory } from '../../agent/history/compaction.ts';
import { saveSummary, summaryFromRow } from '../../agent/history/summary-store.ts';
import { ZERO_USAGE } from '../../agent/model.ts';
import type { OutboundRegistry } from '../../reply/outbound.ts';
import { ReplyStream } from '../../reply/reply-stream.ts';
import { scrubSecrets } from '../../log.ts';
import {
  handOverTurn,
  parkTurn,
  recordPlaceholder,
  settleTurn,
  startTurn,
  type Settlement,
  type StartedRow,
} from '../turn-lifecycle.ts';
import { TEXTS } from '../../core/texts.ts';
import type { TurnEvents } from '../turn-events.ts';
import { type CallDecision, type WorkItem } from '../../core/work-item.ts';
import { WorkItemJobPayload } from '../work-item.ts';
import type { ToolCall } from '../../agent/messages.ts';
import type { WorkerLiveness } from '../worker-liveness.ts';
import { StopRequested, stopRequestOf, type StopListener } from '../stop-requests.ts';
import { feedbackValue, stopButtonValue } from '../../core/buttons.ts';
import type { ReplyButton } from '../../core/reply-target.ts';
import { metrics } from '../../metrics.ts';

/** How a turn that wants approval is parked, and how a continuation picks it up (src/approval). */
export interface ApprovalGate {
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
  approvals: ApprovalGate;
  /** Aborted when this process must stop working at once (declared dead by its peers). */
  fence: AbortSignal;
  /** Stop requests (Stop button, Ctrl-C) for turns running in this process. */
  stops: StopListener;
  /** Aborted when this process begins a graceful shutdown: turns hand over at their next checkpoint. */
  draining: AbortSignal;
}

/** Thrown between rounds while the process shuts down: the turn continues on another worker. */
class HandOver extends Error {
  /** The round the next worker starts with. */
  readonly round: number;
  constructor(round: number) {
    super('this worker is shutting down; the turn continues on another worker');
    this.name = 'HandOver';
    this.round = round;
  }
}

export function initialTurnState(item: WorkItem): TurnState {
  return {
    round: 0,
    messages: item.input.prompt !== undefined ? [{ role: 'user', text: item.input.prompt }] : [],
    emptyRetries: 0,
    usage: { ...ZERO_USAGE },
    reply: { messageIds: item.reply.messageId ? [item.reply.messageId] : [], sealed: [], carry: '' },
    text: '',
    final: false,
    pendingApproval: [],
  };
}

/** Platforms whose replies carry 👍/👎 on a final answer. */
const FEEDBACK_PLATFORMS = new Set(['slack', 'discord']);

/** Puts a work item into a resting status and hands the conversation to its next item (one statement). */
const settle = (pool: Pool, item: WorkItem, settlement: Settlement) => settleTurn(pool, item, settlement);

/** The graphile-worker task that runs one work item (a turn or a continuation) to a resting point. */
export function createWorkItemTask(services: WorkerServices): Task {
  const { pool, config } = services;
  return async (payload, helpers) => {
    const { workItemId } = WorkItemJobPayload.parse(payload);
    services.events.emit('jobStarted', { workItemId });
    if (helpers.job.locked_by) await services.liveness.claimSlot(helpers.job.locked_by);
    // Tracked before the item is read: a stop request committed after the read below is notified
    // to a tracked turn, and one committed before it is in the row. So the first round needs no
    // separate check.
    const stop = services.stops.track(workItemId);
    try {
      const started = await startTurn(
        pool,
        workItemId,
        config.AGENT_HISTORY_TOKENS > 0 ? HISTORY_ROWS_WITH_COMPACTION : config.AGENT_HISTORY_MESSAGES,
      );
      // Already at rest: a replay of a job whose item finished before the job was marked complete.
      if (!started) return;
      const { row } = started;
      const item = await withPlaceholder(started.item, row);
      services.events.emit('started', { item, attempt: row.attempts });
      await runItem(item, row, stop);
    } finally {
      stop.release();
    }

    /**
     * Posts the item's placeholder when its reply has no message yet, and records the message's id
     * on the item before the turn starts, so a replay streams into the same message. A crash between
     * the post and the update leaves one stray placeholder; a failed post fails the job, which
     * graphile-worker retries — the message itself is never lost.
     */
    async function withPlaceholder(item: WorkItem, row: StartedRow): Promise<WorkItem> {
      if (!item.placeholder || item.reply.messageId || row.checkpoint) return item;
      const posted = await services.outbounds.for(item.reply).post(item.reply, item.placeholder);
      return recordPlaceholder(pool, item, posted.messageId);
    }

    function feedbackButtons(item: WorkItem): ReplyButton[] | undefined {
      if (!config.FEEDBACK_BUTTONS || !FEEDBACK_PLATFORMS.has(item.reply.platform)) return undefined;
      return [
        { label: '👍', value: feedbackValue(item.id, 'up'), style: 'secondary' },
        { label: '👎', value: feedbackValue(item.id, 'down'), style: 'secondary' },
      ];
    }

    /**
     * The history the model is given. With compaction (AGENT_HISTORY_TOKENS > 0): the stored summary
     * and the messages after it, compacted once more (and stored) when they pass the budget; without,
     * the newest AGENT_HISTORY_MESSAGES messages.
     */
    async function historyOf(item: WorkItem, row: StartedRow, log: Logger) {
      const first = firstCompleteExchange(row.history);
      const messages = row.history.slice(first);
      if (config.AGENT_HISTORY_TOKENS === 0) return messages;
      const prepared = prepareHistory(
        { summary: summaryFromRow(row.summary), messages, ids: row.history_ids.slice(first).map(Number) },
        { budgetTokens: config.AGENT_HISTORY_TOKENS },
      );
      if (prepared.compacted) {
        const { summary, throughId, messages: folded } = prepared.compacted;
        await saveSummary(pool, item.conversationId, summary, throughId);
        metrics.historyCompactions.inc();
        log.info({ folded, tokensAfter: prepared.tokens }, 'compacted the conversation history');
      }
      return prepared.messages;
    }

    async function runItem(item: WorkItem, row: StartedRow, stop: ReturnType<StopListener['track']>): Promise<void> {
      const log = services.log.child({ workItemId: item.id, conversationId: item.conversationId });
      const signal = AbortSignal.any([
        helpers.abortSignal ?? new AbortController().signal,
        services.fence,
        stop.signal,
      ]);
      const startedAt = Date.now();
      // The stop request was read with the item; later ones come by notification, and are also
      // checked for before every further round (in case a notification was missed).
      let stopChecked = true;
      const checkStop = async () => {
        if (stopChecked) {
          stopChecked = false;
          return;
        }
        const by = await stopRequestOf(pool, item.id);
        if (by) stop.abort(by);
      };
      if (row.stopped_by) stop.abort(row.stopped_by);

      let state: TurnState;
      const checkpoint = checkpointFromRow(row.checkpoint_version, row.checkpoint);
      if (checkpoint) {
        state = checkpoint;
      } else if (item.input.approval) {
        const resumed = await services.approvals.resume(item, log);
        if ('refused' in resumed) {
          const sink = new ReplyStream(services.outbounds.for(item.reply), item.reply, { log });
          await sink.finish(resumed.refused);
          await settle(pool, item, { status: 'failed', error: resumed.refused });
          services.events.emit('failed', { item, error: resumed.refused });
          return;
        }
        state = resumed.state;
      } else {
        state = initialTurnState(item);
      }

      const mode = item.input.approval ? 'queue' : (item.mode ?? 'queue');
      let collected = false;
      /**
       * The conversation's newer messages at a safe point (docs/conversations.md). `steer` and
       * `collect` take them into the turn — in the transaction that saves the checkpoint holding
       * them, so each is read exactly once whatever dies when — and `interrupt` stops the turn.
       */
      const followUps = async (
        current: TurnState,
        at: 'round' | 'final',
      ): Promise<'none' | 'steered' | 'superseded'> => {
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
      const take = async (current: TurnState, how: 'append' | 'merge'): Promise<number> => {
        const taken = await takeFollowUps(pool, item, mode, current, how);
        if (taken > 0) log.info({ taken, how }, 'newer messages joined the turn');
        return taken;
      };

      let firstText = true;
      const sink = new ReplyStream(services.outbounds.for(item.reply), item.reply, {
        log,
        initial: state.reply,
        liveButtons: [{ label: 'Stop', value: stopButtonValue(item.id), style: 'danger' }],
        liveButtonsAfterMs: config.STOP_BUTTON_AFTER_MS,
        onDelivered: () => {
          if (firstText) {
            firstText = false;
            services.events.emit('firstVisibleText', { item, latencyMs: Date.now() - Date.parse(item.createdAt) });
          }
        },
      });
      let outcome: TurnOutcome;
      try {
        const history = await historyOf(item, row, log);
        outcome = await runTurn(
          {
            workItemId: item.id,
            conversationId: item.conversationId,
            requester: item.requester,
            system: services.systemPrompt(item),
            history,
          },
          state,
          {
            db: pool,
            provider: services.provider,
            tools: services.tools,
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
            rule: (call) => services.approvals.rule(item, call),
            onRuled: (call, ruling) => services.approvals.recordRuling(item, call, ruling),
            useGrant: async (call) => services.approvals.useGrant?.(item, call),
            followUps: (current, at) => followUps(current, at),
            onDecidedCall: async (call, decision, result) => {
              const envelopeId = item.input.approval?.envelopeId;
              if (envelopeId) await services.approvals.recordOutcome(envelopeId, call, decision, result.isError);
            },
          },
        );
      } catch (error) {
        if (error instanceof HandOver) {
          // The last round is checkpointed: schedule the item again at once for a live worker.
          await handOverTurn(pool, item);
          log.info({ round: error.round }, 'handed the turn over to another worker');
          return;
        }
        if (error instanceof Superseded) {
          await sink.finish(TEXTS.superseded(sink.text));
          const partial = sink.text.trim() ? [{ role: 'assistant' as const, text: sink.text, toolCalls: [] }] : [];
          const asked = state.messages.filter((m) => m.role === 'user');
          await settle(pool, item, {
            status: 'cancelled',
            error: 'superseded by a newer message',
            messages: [...asked, ...partial],
            deleteCheckpoint: true,
          });
          log.info('turn superseded by a newer message');
          services.events.emit('cancelled', { item, by: item.requester });
          return;
        }
        if (signal.reason instanceof StopRequested) {
          const by = signal.reason.by;
          await sink.finish(TEXTS.stopped(sink.text, by));
          const partial = sink.text.trim() ? [{ role: 'assistant' as const, text: sink.text, toolCalls: [] }] : [];
          const prompt = state.messages[0]?.role === 'user' ? [state.messages[0]] : [];
          await settle(pool, item, {
            status: 'cancelled',
            error: 'stopped by a person',
            messages: [...prompt, ...partial],
            deleteCheckpoint: true,
          });
          metrics.turnsStopped.inc();
          log.info({ by }, 'turn stopped');
          services.events.emit('cancelled', { item, by });
          return;
        }
        // Infrastructure trouble or shutdown: let graphile-worker retry; the turn resumes from its checkpoint.
        if (isDatabaseUnavailable(error)) {
          log.warn({ err: error }, 'database unavailable during the turn; waiting for it before handing the turn back');
          await waitForDatabase(pool);
          throw error;
        }
        if (signal.aborted) throw error;
        const reason = scrubSecrets((error as Error).message ?? String(error));
        log.error({ err: error }, 'turn failed');
        await sink.finish(TEXTS.failed(sink.text, reason));
        await settle(pool, item, { status: 'failed', error: reason, deleteCheckpoint: true });
        services.events.emit('failed', { item, error: reason });
        return;
      }

      if (outcome.kind === 'final') {
        await sink.finish(outcome.text, feedbackButtons(item));
        await settle(pool, item, {
          status: 'done',
          result: { text: outcome.text, usage: outcome.state.usage },
          messages: outcome.state.messages,
          deleteCheckpoint: true,
        });
        log.info({ rounds: outcome.state.round, durationMs: Date.now() - startedAt }, 'turn finished');
        services.events.emit('finished', { item, text: outcome.text, durationMs: Date.now() - startedAt });
        return;
      }

      const parkedState: TurnState = { ...outcome.state, reply: sink.snapshot() };
      await sink.finish(sink.text || undefined);
      const parked = await parkTurn(pool, item, (client) => services.approvals.park(client, item, parkedState));
      if (parked.supersededBy) log.info({ by: parked.supersededBy }, 'a message sent while planning withdrew the card');
      else services.events.emit('awaitingApproval', { item, calls: outcome.calls });
    }
  };
}

/**
 * History handed to the model must not start in the middle of a tool exchange (a tool result without
 * its call), which providers reject: where the first user message is (leading messages before it are
 * dropped; with none, all are).
 */
function firstCompleteExchange(history: Array<{ role: string }>): number {
  const first = history.findIndex((m) => m.role === 'user');
  return first < 0 ? history.length : first;
}

/**
 * With compaction on, the rows read at turn start are the messages after the summary, which
 * compaction keeps within its budget; this only bounds a conversation from before compaction.
 */
const HISTORY_ROWS_WITH_COMPACTION = 1000;
