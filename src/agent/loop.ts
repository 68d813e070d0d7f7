import type { AssistantMessage, Message, ToolCall, ToolResult } from './messages.ts';
import { addUsage, type ModelProvider, type ModelRequest, type ModelRound, type RoundCallbacks } from './model.ts';
import { metrics } from '../metrics.ts';
import type { ToolRegistry } from './tools/registry.ts';
import { admitArgs } from './tools/tool.ts';
import type { CallDecision } from '../core/work-item.ts';
import { recordModelRound, saveCheckpoint, type RoundRecord } from './turn-store.ts';
import type { TurnState } from './turn-state.ts';
import { ruleCall, type RulingDeps } from './call-ruling.ts';
import { spendingCall, type ModelSpend, type SpendRefused } from './model-spend.ts';
import {
  executeToolCall,
  type ToolCallContext,
  type ToolExecutionDeps,
  type ToolExecutionSettings,
} from './tool-execution.ts';

// The policy's types are named where the loop's callers (queue, approval) already look for them.

interface TurnSettings extends ToolExecutionSettings {
  maxRounds: number;
  emptyRoundRetries: number;
  maxTokens: number;
}

export interface TurnContext extends ToolCallContext {
  /** The system prompt for this turn. */
  system: string;
  /** Earlier messages of the conversation. */
  history: Message[];
}

/** What a turn needs: tool execution's and the policy's parts (see their modules), and the loop's own. */
export interface TurnDeps extends ToolExecutionDeps, RulingDeps {
  settings: TurnSettings;
  provider: ModelProvider;
  /** Runs before every model round (checks for a stop request). */
  beforeRound?: (round: number) => Promise<void>;
  /** Told about each call a person decided on, once its result is known (approval audit). */
  onDecidedCall?: (call: ToolCall, decision: CallDecision, result: ToolResult) => Promise<void>;
  /**
   * At a safe point — before a model round (any running tool has finished), or when an answer would
   * be final — what the conversation's newer messages do: `steered` when they joined `state` (and a
   * checkpoint holding them was saved), `superseded` when the turn must stop for them.
   */
  followUps?: (state: TurnState, at: 'round' | 'final') => Promise<'none' | 'steered' | 'superseded'>;
  /** Spend limits (src/budgets): each model call reserves before and settles after; absent: none. */
  spend?: ModelSpend;
}

/** Thrown at a safe point when a newer message supersedes the running turn (`interrupt`). */
export class Superseded extends Error {
  constructor() {
    super('a newer message supersedes this turn');
    this.name = 'Superseded';
  }
}

export type TurnOutcome =
  | { kind: 'final'; text: string; state: TurnState }
  | { kind: 'awaiting_approval'; calls: ToolCall[]; state: TurnState };

/**
 * Saves the turn after a round, with the reply's message ids so a resumed turn edits the same
 * messages, and the round's model usage when it is not recorded yet (same statement).
 */
async function checkpoint(ctx: TurnContext, state: TurnState, deps: TurnDeps, round?: RoundRecord): Promise<void> {
  state.reply = deps.sink.snapshot();
  await saveCheckpoint(deps.db, ctx.workItemId, state, round);
}

function countRound(answer: ModelRound): void {
  metrics.modelRounds.inc({ provider: answer.provider });
  for (const f of answer.fallbacks) metrics.modelFallbacks.inc({ from: f.provider });
  const { inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens } = answer.usage;
  metrics.tokens.inc({ provider: answer.provider, kind: 'input' }, inputTokens);
  metrics.tokens.inc({ provider: answer.provider, kind: 'output' }, outputTokens);
  metrics.tokens.inc({ provider: answer.provider, kind: 'cache_read' }, cacheReadTokens);
  metrics.tokens.inc({ provider: answer.provider, kind: 'cache_write' }, cacheWriteTokens);
}

const EMPTY_ROUND_GUIDANCE =
  'Your previous answer was empty. Reply to the last user message with text, or call one of the available tools.';
const RECOVERY_MESSAGE =
  "I couldn't produce an answer to that. Could you rephrase the request or add a little more detail?";
const ROUND_LIMIT_INSTRUCTION =
  'You have used every tool round this turn allows. Do not call tools. Using only the work shown, give the user a short, direct answer now, and say briefly what is left undone.';
const MAX_TOOL_RESULT_IN_SUMMARY = 600;

/** Joins the text of successive rounds the way a reader expects to see them. */
function joinText(previous: string, next: string): string {
  if (!previous || !next) return previous + next;
  return /\s$/.test(previous) || /^\s/.test(next) ? previous + next : `${previous}\n\n${next}`;
}

/**
 * Streams a round's text into the reply after the text of earlier rounds (`prefix`), separated the
 * way joinText joins them; a restarted round starts its separation again.
 */
function streamAfter(prefix: string, sink: TurnDeps['sink']): RoundCallbacks {
  let separated = false;
  return {
    onText: (delta) => {
      const piece = separated ? delta : joinText(prefix, delta).slice(prefix.length);
      separated = true;
      sink.append(piece);
    },
    onRoundRestart: () => {
      separated = false;
      sink.restartRound();
    },
  };
}

/**
 * A round's model usage, written once: with the checkpoint that ends the round (one round trip), or
 * before the first tool of the round runs, whichever comes first. `record` is undefined once written.
 */
interface RoundUsage {
  record: RoundRecord | undefined;
}

async function recordUsageNow(ctx: TurnContext, deps: TurnDeps, usage: RoundUsage): Promise<void> {
  if (!usage.record) return;
  await recordModelRound(deps.db, ctx.workItemId, usage.record);
  usage.record = undefined;
}

/**
 * Runs a turn from its current state to a resting point: a final answer, or calls that wait for a
 * person's approval. After every round the state is checkpointed, so a replay (another worker after
 * a crash) resumes from the last completed round, and every tool execution is recorded by its
 * tool-call id before its result is used, so a replay never runs a tool twice.
 */
export async function runTurn(ctx: TurnContext, initial: TurnState, deps: TurnDeps): Promise<TurnOutcome> {
  const state: TurnState = structuredClone(initial);
  if (state.final) return { kind: 'final', text: state.text, state };
  deps.sink.restoreText(state.text);
  if (state.pendingApproval.length > 0) {
    // Parked before a crash, but the envelope never committed: ask again rather than run on without it.
    if (!state.approvalDecisions) return { kind: 'awaiting_approval', calls: state.pendingApproval, state };
    const decided = await applyDecisions(ctx, state, deps);
    if (state.commandCall) return finish(ctx, state, deps, undefined, commandAnswer(decided), commandAnswer(decided));
  }
  if (state.commandCall) return runCommandCall(ctx, state, deps);
  while (state.round < deps.settings.maxRounds) {
    const outcome = await runRound(ctx, state, deps);
    if (outcome) return outcome;
  }
  return answerAtRoundLimit(ctx, state, deps);
}

/** One model round and its tool calls; undefined when the turn goes on to another round. */
async function runRound(ctx: TurnContext, state: TurnState, deps: TurnDeps): Promise<TurnOutcome | undefined> {
  await deps.beforeRound?.(state.round);
  deps.signal.throwIfAborted();
  if ((await deps.followUps?.(state, 'round')) === 'superseded') throw new Superseded();
  const answer = await streamRound(ctx, state, deps);
  // Over a budget the turn ends with the refusal as its answer (a continuation too).
  if ('refused' in answer)
    return finish(ctx, state, deps, undefined, joinText(state.text, answer.refused), answer.refused);
  const usage: RoundUsage = { record: { conversationId: ctx.conversationId, round: state.round, answer } };
  countRound(answer);
  state.usage = addUsage(state.usage, answer.usage);
  state.round += 1;

  if (!answer.text.trim() && answer.toolCalls.length === 0) return answerEmptyRound(ctx, state, deps, usage);
  state.emptyRetries = 0;
  state.text = joinText(state.text, answer.text);
  // From here on each call carries the arguments its tool will run with: the policy, the card,
  // the plan hash, grants and the history all see that one object.
  const toolCalls = answer.toolCalls.map((call) => admittedCall(deps.tools, call));
  const assistant: AssistantMessage = { role: 'assistant', text: answer.text, toolCalls };
  state.messages.push(assistant);

  if (toolCalls.length === 0) {
    // A message that came while this answer was written joins the turn instead of waiting. Only
    // then is the answer checkpointed as a step: a checkpoint holding an answer not marked final
    // would make a replay after a crash ask the model again.
    if ((await deps.followUps?.(state, 'final')) === 'steered') {
      await checkpoint(ctx, state, deps, usage.record);
      return undefined;
    }
    return finish(ctx, state, deps, usage.record, state.text);
  }

  // What the model said before its calls is its plan: the task timeline's heading where there is one.
  const plan = planTitle(answer.text);
  if (plan) deps.sink.task?.({ id: 'plan', kind: 'plan', title: plan, status: 'in_progress' });

  const { waiting, results } = await ruleAndRunCalls(ctx, toolCalls, deps, usage);
  if (waiting.length > 0) {
    state.pendingApproval = waiting;
    // Results of the calls that already ran are kept until the decisions arrive.
    if (results.length > 0) state.messages.push({ role: 'tool', results });
    deps.sink.setStatus(undefined);
    await checkpoint(ctx, state, deps, usage.record);
    return { kind: 'awaiting_approval', calls: waiting, state };
  }
  state.messages.push({ role: 'tool', results });
  await checkpoint(ctx, state, deps, usage.record);
  return undefined;
}

/** Asks the model for the next round, streaming its text into the reply. */
function streamRound(ctx: TurnContext, state: TurnState, deps: TurnDeps): Promise<ModelRound | SpendRefused> {
  const retryingEmpty = state.emptyRetries > 0;
  const request: ModelRequest = {
    system: retryingEmpty ? `${ctx.system}\n\n${EMPTY_ROUND_GUIDANCE}` : ctx.system,
    messages: [...ctx.history, ...state.messages],
    tools: deps.tools.specs(),
    maxTokens: deps.settings.maxTokens,
  };
  const callbacks = streamAfter(state.text, deps.sink);
  deps.sink.beginRound();
  return spendingCall(deps.provider, deps.spend, request, callbacks, deps.signal);
}

/** An empty round is retried with guidance a few times, then answered with the recovery message. */
async function answerEmptyRound(
  ctx: TurnContext,
  state: TurnState,
  deps: TurnDeps,
  usage: RoundUsage,
): Promise<TurnOutcome | undefined> {
  // After a call the bot made itself (a change card's merge, appended once the model had answered),
  // a model often has nothing to add: that call's result is the answer, not a plea to rephrase.
  const own = botCallResult(state, deps);
  if (own) return finish(ctx, state, deps, usage.record, joinText(state.text, own), own);
  if (state.emptyRetries < deps.settings.emptyRoundRetries) {
    state.emptyRetries += 1;
    deps.log.warn(
      { round: state.round, retry: state.emptyRetries },
      'model returned an empty round; retrying with guidance',
    );
    await checkpoint(ctx, state, deps, usage.record);
    return undefined;
  }
  deps.log.warn({ round: state.round }, 'model kept returning empty rounds; answering with the recovery message');
  return finish(ctx, state, deps, usage.record, joinText(state.text, RECOVERY_MESSAGE), RECOVERY_MESSAGE);
}

/** The results of the last round's calls, when every one was of a hidden tool (the model never calls those). */
function botCallResult(state: TurnState, deps: TurnDeps): string | undefined {
  const last = state.messages.at(-1);
  if (last?.role !== 'tool' || last.results.length === 0) return undefined;
  if (!last.results.every((r) => deps.tools.get(r.name)?.hidden)) return undefined;
  return last.results.map((r) => r.content).join('\n\n');
}

/** Calls that need nobody's approval run now (in order); the rest wait for a person. */
async function ruleAndRunCalls(
  ctx: TurnContext,
  toolCalls: ToolCall[],
  deps: TurnDeps,
  usage: RoundUsage,
): Promise<{ waiting: ToolCall[]; results: ToolResult[] }> {
  const waiting: ToolCall[] = [];
  const results: ToolResult[] = [];
  for (const call of toolCalls) {
    const verdict = await ruleCall(call, deps);
    if (verdict.kind === 'wait') waiting.push(call);
    else if (verdict.kind === 'denied') results.push(verdict.result);
    else {
      await recordUsageNow(ctx, deps, usage);
      results.push(await executeToolCall(ctx, call, deps, verdict.note, verdict.note ? 'grant' : 'allow'));
    }
  }
  return { waiting, results };
}

/** A call with the arguments its tool accepted (defaults filled in); a refused one stays as sent. */
function admittedCall(tools: ToolRegistry, call: ToolCall): ToolCall {
  const tool = tools.get(call.name);
  if (!tool || call.argsError) return call;
  const admitted = admitArgs(tool, call.args);
  return admitted.ok ? { ...call, args: admitted.args } : call;
}

/** The first line of what the model said before calling tools, without Markdown markers. */
export function planTitle(text: string): string | undefined {
  const line = text
    .split('\n')
    .map((l) =>
      l
        .replace(/^\s*(?:#{1,6}\s+|[-*+>]\s+|\d+[.)]\s+)/, '')
        .replace(/[*_`~]/g, '')
        .trim(),
    )
    .find(Boolean);
  if (!line) return undefined;
  return line.length <= 256 ? line : `${line.slice(0, 255)}…`;
}

const DENIED =
  'A person denied this call, so it was not run. Do not try it again unless they ask; tell them what you would have done instead.';

/**
 * What a tool does when a person denies its call (a change card's Discard), told to the model. It
 * may run again after a crash before the checkpoint, so tools make it idempotent.
 */
async function afterDenial(ctx: TurnContext, call: ToolCall, deps: TurnDeps): Promise<string | undefined> {
  const tool = deps.tools.get(call.name);
  if (!tool?.onDenied) return undefined;
  try {
    return await tool.onDenied(call.args, {
      workItemId: ctx.workItemId,
      conversationId: ctx.conversationId,
      requester: ctx.requester,
      ...(ctx.reply ? { reply: ctx.reply } : {}),
      signal: deps.signal,
      log: deps.log.child({ tool: call.name, toolCallId: call.id }),
    });
  } catch (error) {
    deps.log.warn({ err: error, tool: call.name }, 'a denied call could not be cleaned up');
    return `(Cleaning up after the denial failed: ${(error as Error).message})`;
  }
}

/**
 * A command's turn (`/schedule`): the call the command decided on is ruled like the model's — the
 * policy, a card, a grant — and run or parked; no model round reads or answers it. Its result (or
 * why it did not run) is the answer.
 */
async function runCommandCall(ctx: TurnContext, state: TurnState, deps: TurnDeps): Promise<TurnOutcome> {
  const asked = state.messages.at(-1);
  const decided = asked?.role === 'assistant' ? asked.toolCalls[0] : undefined;
  if (!asked || asked.role !== 'assistant' || !decided) throw new Error('a command turn without its call');
  // The defaults filled in, as for the model's calls: the card and the plan hash see what will run.
  const call = admittedCall(deps.tools, decided);
  asked.toolCalls = [call];
  const verdict = await ruleCall(call, deps);
  if (verdict.kind === 'wait') {
    state.pendingApproval = [call];
    deps.sink.setStatus(undefined);
    await checkpoint(ctx, state, deps);
    return { kind: 'awaiting_approval', calls: [call], state };
  }
  const result =
    verdict.kind === 'denied'
      ? verdict.result
      : await executeToolCall(ctx, call, deps, verdict.note, verdict.note ? 'grant' : 'allow');
  state.messages.push({ role: 'tool', results: [result] });
  const answer = verdict.kind === 'denied' ? COMMAND_REFUSED : commandAnswer([result]);
  return finish(ctx, state, deps, undefined, answer, answer);
}

const COMMAND_REFUSED = 'The policy does not allow this here, so nothing was done.';

/** What a command's turn answers: its call's result, or that a person denied it. */
function commandAnswer(results: ToolResult[]): string {
  const [result] = results;
  if (!result) return 'Nothing was done.';
  return result.decision === 'denied' ? 'Denied, so nothing was done.' : result.content;
}

/**
 * An approved call of a tool that binds its card to content (share_file) whose card bound none: the
 * file was missing or unreadable when the card was shown, so the approval covers no bytes. Run anyway,
 * it would post whatever is there by then — a file an earlier call on the same card wrote, holding a
 * key the requester alone could not have approved to share.
 */
function unpinnedApproval(call: ToolCall, decision: CallDecision, deps: TurnDeps): boolean {
  return !decision.content && deps.tools.get(call.name)?.pinContent !== undefined;
}

const UNPINNED =
  'This call was not run: its card found no file to show, so the approval covers no content. Ask again now that the file is there.';

/** Runs the calls a person approved, answers the denied ones, and checkpoints the result. */
async function applyDecisions(ctx: TurnContext, state: TurnState, deps: TurnDeps): Promise<ToolResult[]> {
  const decisions = new Map((state.approvalDecisions ?? []).map((d) => [d.toolCallId, d] as const));
  const results: ToolResult[] = [];
  for (const call of state.pendingApproval) {
    const decision = decisions.get(call.id) ?? { toolCallId: call.id, approved: false };
    let result: ToolResult;
    if (decision.answer !== undefined) {
      result = {
        toolCallId: call.id,
        name: call.name,
        content: `The person answered: ${decision.answer}`,
        isError: false,
      };
    } else if (decision.approved && unpinnedApproval(call, decision, deps)) {
      result = { toolCallId: call.id, name: call.name, content: UNPINNED, isError: true, decision: 'denied' };
    } else if (decision.approved) {
      const approvedCtx = decision.content ? { ...ctx, approvedContent: decision.content } : ctx;
      result = { ...(await executeToolCall(approvedCtx, call, deps, undefined, 'approved')), decision: 'approved' };
    } else {
      const denied = decision.reason ? `This call was not run: ${decision.reason}` : DENIED;
      const content = [denied, await afterDenial(ctx, call, deps)].filter(Boolean).join(' ');
      result = { toolCallId: call.id, name: call.name, content, isError: true, decision: 'denied' };
    }
    results.push(result);
    await deps.onDecidedCall?.(call, decision, result);
  }
  // Results of the round's calls that needed no approval are already there: keep one tool message.
  const last = state.messages.at(-1);
  if (last?.role === 'tool') last.results.push(...results);
  else state.messages.push({ role: 'tool', results });
  state.pendingApproval = [];
  state.approvalDecisions = undefined;
  await checkpoint(ctx, state, deps);
  return results;
}

/** Records the final answer durably before it is delivered, so a crash during delivery only re-delivers. */
async function finish(
  ctx: TurnContext,
  state: TurnState,
  deps: TurnDeps,
  round: RoundRecord | undefined,
  text: string,
  recoveryText?: string,
): Promise<TurnOutcome> {
  if (recoveryText) state.messages.push({ role: 'assistant', text: recoveryText, toolCalls: [] });
  state.text = text;
  state.final = true;
  await checkpoint(ctx, state, deps, round);
  return { kind: 'final', text, state };
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} more characters]`;
}

/** A compact transcript of the turn so far: the request, then each call and a shortened result. */
function compactTranscript(messages: Message[]): string {
  const lines: string[] = [];
  for (const m of messages) {
    if (m.role === 'user') lines.push(`User asked: ${m.text}`);
    else if (m.role === 'assistant') {
      if (m.text.trim()) lines.push(`You said: ${truncate(m.text, MAX_TOOL_RESULT_IN_SUMMARY)}`);
      for (const c of m.toolCalls) lines.push(`You called ${c.name}(${truncate(JSON.stringify(c.args), 200)})`);
    } else {
      for (const r of m.results) {
        lines.push(
          `${r.name} ${r.isError ? 'failed' : 'returned'}: ${truncate(r.content, MAX_TOOL_RESULT_IN_SUMMARY)}`,
        );
      }
    }
  }
  return lines.join('\n');
}

/** The round limit ends with a short answer from the compacted history, never silence. */
async function answerAtRoundLimit(ctx: TurnContext, state: TurnState, deps: TurnDeps): Promise<TurnOutcome> {
  deps.log.warn({ rounds: state.round }, 'round limit reached; asking for a summary answer');
  deps.sink.beginRound();
  const callbacks = streamAfter(state.text, deps.sink);
  let text = '';
  let round: RoundRecord | undefined;
  try {
    const answer = await spendingCall(
      deps.provider,
      deps.spend,
      {
        system: `${ctx.system}\n\n${ROUND_LIMIT_INSTRUCTION}`,
        messages: [{ role: 'user', text: compactTranscript(state.messages) }],
        tools: [],
        maxTokens: Math.min(deps.settings.maxTokens, 1024),
      },
      callbacks,
      deps.signal,
    );
    if ('refused' in answer) text = answer.refused;
    else {
      round = { conversationId: ctx.conversationId, round: state.round, answer };
      state.usage = addUsage(state.usage, answer.usage);
      text = answer.text.trim() ? answer.text : '';
    }
  } catch (error) {
    deps.log.warn({ err: error }, 'summary answer at the round limit failed');
  }
  if (!text) {
    text = `I stopped after ${deps.settings.maxRounds} steps without a complete answer. Ask me to continue if you want me to keep going.`;
  }
  state.messages.push({ role: 'assistant', text, toolCalls: [] });
  state.text = joinText(state.text, text);
  state.final = true;
  await checkpoint(ctx, state, deps, round);
  return { kind: 'final', text: state.text, state };
}
