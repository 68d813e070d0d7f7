import type { Logger } from 'pino';
import type { Queryable } from '../db/pool.ts';
import type { ReplySink } from '../reply/reply-sink.ts';
import type { AssistantMessage, Message, ToolCall, ToolResult } from './messages.ts';
import { addUsage, type ModelProvider, type ModelRequest, type ModelRound } from './model.ts';
import { metrics } from '../metrics.ts';
import { fitToBudget } from './tools/result-budget.ts';
import type { ToolRegistry } from './tools/registry.ts';
import {
  admitArgs,
  DEFAULT_TOOL_TIMEOUT_SECONDS,
  needsApproval,
  timeLimitOf,
  type AnyTool,
  type ToolOutput,
} from './tools/tool.ts';
import type { Requester } from '../core/person.ts';
import type { CallDecision } from '../core/work-item.ts';
import {
  findToolExecution,
  recordModelRound,
  recordToolResult,
  recordToolStart,
  saveCheckpoint,
  type RoundRecord,
} from './turn-store.ts';
import type { TurnState } from './turn-state.ts';

export interface TurnSettings {
  /** Tool results longer than this (estimated tokens) are cut to fit. */
  toolResultMaxTokens?: number;
  /** TOOL_TIMEOUT_SECONDS: a tool call's time limit unless the tool asks for more (run_command). */
  toolTimeoutSeconds?: number;
  maxRounds: number;
  emptyRoundRetries: number;
  maxTokens: number;
}

export interface TurnContext {
  workItemId: string;
  conversationId: string;
  requester: Requester;
  /** The system prompt for this turn. */
  system: string;
  /** Earlier messages of the conversation. */
  history: Message[];
}

export interface TurnDeps {
  db: Queryable;
  provider: ModelProvider;
  tools: ToolRegistry;
  sink: ReplySink;
  settings: TurnSettings;
  log: Logger;
  signal: AbortSignal;
  /** Runs before every model round (checks for a stop request). */
  beforeRound?: (round: number) => Promise<void>;
  /** Told about each call a person decided on, once its result is known (approval audit). */
  onDecidedCall?: (call: ToolCall, decision: CallDecision, result: ToolResult) => Promise<void>;
  /**
   * What the policy says of a call with valid arguments. Absent: each tool's own `approval` decides
   * (`ask` or `allow`).
   */
  rule?: (call: ToolCall) => CallRuling | Promise<CallRuling>;
  /** Told about each call a rule decided without a person (allowed or denied), before it runs (audit). */
  onRuled?: (call: ToolCall, ruling: CallRuling) => Promise<void>;
  /**
   * For a call that would wait for a person: a standing grant that covers it, claimed (and audited)
   * atomically, or undefined. A covered call runs at once, saying whose grant allowed it.
   */
  useGrant?: (call: ToolCall) => Promise<GrantUse | undefined>;
  /**
   * At a safe point — before a model round (any running tool has finished), or when an answer would
   * be final — what the conversation's newer messages do: `steered` when they joined `state` (and a
   * checkpoint holding them was saved), `superseded` when the turn must stop for them.
   */
  followUps?: (state: TurnState, at: 'round' | 'final') => Promise<'none' | 'steered' | 'superseded'>;
}

/** Thrown at a safe point when a newer message supersedes the running turn (`interrupt`). */
export class Superseded extends Error {
  constructor() {
    super('a newer message supersedes this turn');
    this.name = 'Superseded';
  }
}

/** A standing grant a call ran under: shown in the progress line while it runs. */
export interface GrantUse {
  grantId: string;
  /** e.g. "allowed by a grant from Alice, expires 2026-12-01 14:00 UTC" */
  note: string;
}

/** The policy's outcome for one call, and the rule that decided it (`name, source`). */
export interface CallRuling {
  outcome: 'allow' | 'ask' | 'countersign' | 'deny';
  rule: string;
  /** Why a call is denied, from the rule. */
  message?: string;
}

function ownRuling(tool: AnyTool, args: unknown): CallRuling {
  return needsApproval(tool, args) ? { outcome: 'ask', rule: 'tool' } : { outcome: 'allow', rule: 'tool' };
}

/** The tool result of a call the policy refused: the model hears which rule, and why. */
function policyDenial(call: ToolCall, ruling: CallRuling): ToolResult {
  const why = ruling.message ? ` ${ruling.message}` : '';
  return {
    toolCallId: call.id,
    name: call.name,
    content: `The policy does not allow this call (rule ${ruling.rule}), so it was not run.${why} Do not try it again; tell the person what you would have done instead.`,
    isError: true,
  };
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
 * Runs a turn from its current state to a resting point: a final answer, or calls that wait for a
 * person's approval. After every round the state is checkpointed, so a replay (another worker after
 * a crash) resumes from the last completed round, and every tool execution is recorded by its
 * tool-call id before its result is used, so a replay never runs a tool twice.
 */
export async function runTurn(ctx: TurnContext, initial: TurnState, deps: TurnDeps): Promise<TurnOutcome> {
  const state: TurnState = structuredClone(initial);
  const { sink, settings } = deps;
  if (state.final) return { kind: 'final', text: state.text, state };
  sink.restoreText(state.text);
  if (state.pendingApproval.length > 0) {
    // Parked before a crash, but the envelope never committed: ask again rather than run on without it.
    if (!state.approvalDecisions) return { kind: 'awaiting_approval', calls: state.pendingApproval, state };
    await applyDecisions(ctx, state, deps);
  }

  while (state.round < settings.maxRounds) {
    await deps.beforeRound?.(state.round);
    deps.signal.throwIfAborted();
    if ((await deps.followUps?.(state, 'round')) === 'superseded') throw new Superseded();
    const retryingEmpty = state.emptyRetries > 0;
    const request: ModelRequest = {
      system: retryingEmpty ? `${ctx.system}\n\n${EMPTY_ROUND_GUIDANCE}` : ctx.system,
      messages: [...ctx.history, ...state.messages],
      tools: deps.tools.specs(),
      maxTokens: settings.maxTokens,
    };
    const prefix = state.text;
    let separated = false;
    sink.beginRound();
    const answer = await deps.provider.streamRound(
      request,
      {
        onText: (delta) => {
          if (!separated) {
            separated = true;
            const joined = joinText(prefix, delta);
            sink.append(joined.slice(prefix.length));
          } else {
            sink.append(delta);
          }
        },
        onRoundRestart: () => {
          separated = false;
          sink.restartRound();
        },
      },
      deps.signal,
    );
    // The round's usage is written with the checkpoint that ends the round (one round trip), or
    // before the first tool of the round runs, whichever comes first.
    let unrecorded: RoundRecord | undefined = { conversationId: ctx.conversationId, round: state.round, answer };
    countRound(answer);
    state.usage = addUsage(state.usage, answer.usage);
    state.round += 1;

    if (!answer.text.trim() && answer.toolCalls.length === 0) {
      if (state.emptyRetries < settings.emptyRoundRetries) {
        state.emptyRetries += 1;
        deps.log.warn(
          { round: state.round, retry: state.emptyRetries },
          'model returned an empty round; retrying with guidance',
        );
        await checkpoint(ctx, state, deps, unrecorded);
        continue;
      }
      deps.log.warn({ round: state.round }, 'model kept returning empty rounds; answering with the recovery message');
      return finish(ctx, state, deps, unrecorded, joinText(state.text, RECOVERY_MESSAGE), RECOVERY_MESSAGE);
    }
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
        await checkpoint(ctx, state, deps, unrecorded);
        continue;
      }
      return finish(ctx, state, deps, unrecorded, state.text);
    }

    // What the model said before its calls is its plan: the task timeline's heading where there is one.
    const plan = planTitle(answer.text);
    if (plan) sink.task?.({ id: 'plan', kind: 'plan', title: plan, status: 'in_progress' });

    // Calls that need nobody's approval run now; the rest wait for a person.
    const waiting: ToolCall[] = [];
    const results: ToolResult[] = [];
    for (const call of toolCalls) {
      const tool = deps.tools.get(call.name);
      // Unknown tools and bad arguments are answered by executeToolCall with an error, never run.
      const admitted = tool && !call.argsError && admitArgs(tool, call.args).ok;
      const ruling = admitted ? await (deps.rule?.(call) ?? ownRuling(tool, call.args)) : undefined;
      const grant =
        ruling?.outcome === 'ask' || ruling?.outcome === 'countersign' ? await deps.useGrant?.(call) : undefined;
      if (grant) {
        if (unrecorded) {
          await recordModelRound(deps.db, ctx.workItemId, unrecorded);
          unrecorded = undefined;
        }
        results.push(await executeToolCall(ctx, call, deps, grant.note));
      } else if (ruling?.outcome === 'ask' || ruling?.outcome === 'countersign') {
        waiting.push(call);
      } else if (ruling?.outcome === 'deny') {
        await deps.onRuled?.(call, ruling);
        results.push(policyDenial(call, ruling));
      } else {
        if (ruling) await deps.onRuled?.(call, ruling);
        if (unrecorded) {
          await recordModelRound(deps.db, ctx.workItemId, unrecorded);
          unrecorded = undefined;
        }
        results.push(await executeToolCall(ctx, call, deps));
      }
    }
    if (waiting.length > 0) {
      state.pendingApproval = waiting;
      // Results of the calls that already ran are kept until the decisions arrive.
      if (results.length > 0) state.messages.push({ role: 'tool', results });
      sink.setStatus(undefined);
      await checkpoint(ctx, state, deps, unrecorded);
      return { kind: 'awaiting_approval', calls: waiting, state };
    }
    state.messages.push({ role: 'tool', results });
    await checkpoint(ctx, state, deps, unrecorded);
  }

  return answerAtRoundLimit(ctx, state, deps);
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

/** Runs the calls a person approved, answers the denied ones, and checkpoints the result. */
async function applyDecisions(ctx: TurnContext, state: TurnState, deps: TurnDeps): Promise<void> {
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
    } else if (decision.approved) {
      result = { ...(await executeToolCall(ctx, call, deps)), decision: 'approved' };
    } else {
      const content = decision.reason ? `This call was not run: ${decision.reason}` : DENIED;
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
  const prefix = state.text;
  let separated = false;
  let text = '';
  let round: RoundRecord | undefined;
  try {
    const answer = await deps.provider.streamRound(
      {
        system: `${ctx.system}\n\n${ROUND_LIMIT_INSTRUCTION}`,
        messages: [{ role: 'user', text: compactTranscript(state.messages) }],
        tools: [],
        maxTokens: Math.min(deps.settings.maxTokens, 1024),
      },
      {
        onText: (delta) => {
          const piece = separated ? delta : joinText(prefix, delta).slice(prefix.length);
          separated = true;
          deps.sink.append(piece);
        },
        onRoundRestart: () => {
          separated = false;
          deps.sink.restartRound();
        },
      },
      deps.signal,
    );
    round = { conversationId: ctx.conversationId, round: state.round, answer };
    state.usage = addUsage(state.usage, answer.usage);
    text = answer.text.trim() ? answer.text : '';
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

function asOutput(value: ToolOutput | string): ToolOutput {
  return typeof value === 'string' ? { content: value } : value;
}

/** Why a tool call was abandoned: it ran past its time limit. */
class ToolTimeLimitError extends Error {
  constructor(limitSeconds: number) {
    super(`the tool call exceeded its time limit of ${limitSeconds} s`);
    this.name = 'ToolTimeLimitError';
  }
}

/**
 * Runs one tool call at most once: a replay finds the recorded result; a call whose outcome a crash
 * left unknown is run again only if the tool is idempotent and the call is still within its time
 * limit, otherwise the model is told. A call that runs past its time limit is abandoned (its signal
 * aborts) and recorded as failed, so it is never replayed.
 */
export async function executeToolCall(
  ctx: TurnContext,
  call: ToolCall,
  deps: TurnDeps,
  /** Why it runs without a card, for the progress line (a grant). */
  note?: string,
): Promise<ToolResult> {
  const result = (output: ToolOutput): ToolResult => ({
    toolCallId: call.id,
    name: call.name,
    content: output.content,
    isError: output.isError ?? false,
  });
  const tool = deps.tools.get(call.name);
  if (!tool) {
    const known = deps.tools
      .list()
      .map((t) => t.name)
      .join(', ');
    return result({ content: `There is no tool named "${call.name}". Available tools: ${known}.`, isError: true });
  }
  if (call.argsError) {
    return result({
      content: `Your arguments for ${call.name} were not valid JSON (${call.argsError}). Send them again as a JSON object.`,
      isError: true,
    });
  }
  const parsed = admitArgs(tool, call.args);
  if (!parsed.ok) return result({ content: `Invalid arguments for ${call.name}: ${parsed.problem}`, isError: true });

  const limitSeconds = timeLimitOf(tool, parsed.args, deps.settings.toolTimeoutSeconds ?? DEFAULT_TOOL_TIMEOUT_SECONDS);
  const previous = await findToolExecution(deps.db, ctx.workItemId, call.id, limitSeconds);
  if (previous?.status === 'finished') return result(previous.result);
  if (previous?.status === 'started' && (previous.overdue || !tool.idempotent)) {
    // Overdue: the worker that ran it most likely froze on this very input (and was declared dead),
    // so running it again would freeze this worker too. That holds for read-only tools as well.
    const content = previous.overdue
      ? `The ${call.name} call started earlier did not finish within its time limit of ${limitSeconds} s (the worker running it stopped responding). It was not run again. Try a narrower or simpler call instead.`
      : `The ${call.name} call was interrupted by a worker restart and its outcome is unknown. It was not run again. Check its effect before retrying.`;
    const output: ToolOutput = { content, isError: true };
    await recordToolResult(deps.db, ctx.workItemId, call.id, output);
    metrics.toolCalls.inc({ tool: call.name, outcome: 'error' });
    return result(output);
  }
  if (!previous) {
    const inserted = await recordToolStart(deps.db, ctx.workItemId, call.id, call.name, parsed.args);
    if (!inserted && !tool.idempotent) {
      return result({
        content: `The ${call.name} call is already being handled elsewhere; it was not run twice.`,
        isError: true,
      });
    }
  }

  deps.sink.setStatus(note ? `Running \`${call.name}\` — ${note}…` : `Running \`${call.name}\`…`);
  const task = { id: call.id, title: call.name, ...(note ? { details: note } : {}) };
  deps.sink.task?.({ ...task, status: 'in_progress' });
  let output: ToolOutput;
  const limit = new AbortController();
  const signal = AbortSignal.any([deps.signal, limit.signal]);
  let timer: NodeJS.Timeout | undefined;
  const overdue = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      limit.abort(new ToolTimeLimitError(limitSeconds));
      reject(limit.signal.reason);
    }, limitSeconds * 1000);
  });
  try {
    const running = tool.execute(parsed.args, {
      workItemId: ctx.workItemId,
      conversationId: ctx.conversationId,
      requester: ctx.requester,
      signal,
      log: deps.log.child({ tool: call.name, toolCallId: call.id }),
    });
    // An abandoned call may still settle later; nobody is listening then.
    running.catch(() => undefined);
    output = asOutput(await Promise.race([running, overdue]));
  } catch (error) {
    if (error instanceof ToolTimeLimitError) {
      deps.log.warn({ tool: call.name, toolCallId: call.id, limitSeconds }, 'tool call exceeded its time limit');
      output = {
        content: `${call.name} did not finish within its time limit of ${limitSeconds} s and was abandoned. It will not be run again automatically. Try a narrower or simpler call instead.`,
        isError: true,
      };
    } else {
      if (deps.signal.aborted) throw error;
      output = { content: `${call.name} failed: ${(error as Error).message}`, isError: true };
    }
  } finally {
    clearTimeout(timer);
    deps.sink.setStatus(undefined);
  }
  deps.sink.task?.({ ...task, status: output.isError ? 'error' : 'complete' });
  output = { ...output, content: fitToBudget(output.content, deps.settings.toolResultMaxTokens) };
  await recordToolResult(deps.db, ctx.workItemId, call.id, output);
  metrics.toolCalls.inc({ tool: call.name, outcome: output.isError ? 'error' : 'ok' });
  return result(output);
}
