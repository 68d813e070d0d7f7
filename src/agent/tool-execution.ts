import type { Logger } from 'pino';
import type { Queryable } from '../db/pool.ts';
import type { ReplySink } from '../reply/reply-sink.ts';
import type { Requester } from '../core/person.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import type { ContentPin } from '../core/work-item.ts';
import { metrics } from '../metrics.ts';
import type { ToolCall, ToolResult } from './messages.ts';
import { CHARS_PER_TOKEN, DEFAULT_RESULT_MAX_TOKENS, fitToBudget } from './tools/result-budget.ts';
import type { ToolRegistry } from './tools/registry.ts';
import { admitArgs, DEFAULT_TOOL_TIMEOUT_SECONDS, timeLimitOf, type AnyTool, type ToolOutput } from './tools/tool.ts';
import { findToolExecution, recordToolResult, recordToolStart } from './turn-store.ts';
import { toolResult, toolSpan } from '../telemetry/gen-ai.ts';
import { storableTextMarked } from '../core/storable-text.ts';
import { SpanKind, withSpan } from '../telemetry/spans.ts';

export interface ToolExecutionSettings {
  /** Tool results longer than this (estimated tokens) are cut to fit. */
  toolResultMaxTokens?: number;
  /** TOOL_TIMEOUT_SECONDS: a tool call's time limit unless the tool asks for more (run_command). */
  toolTimeoutSeconds?: number;
}

/** The turn a call belongs to. */
export interface ToolCallContext {
  workItemId: string;
  conversationId: string;
  requester: Requester;
  /** Where the turn answers. */
  reply?: ReplyTarget;
  /** The bytes the card showed, for a call a person approved (ToolContext.approvedContent). */
  approvedContent?: ContentPin;
}

export interface ToolExecutionDeps {
  db: Queryable;
  tools: ToolRegistry;
  sink: ReplySink;
  settings: ToolExecutionSettings;
  log: Logger;
  signal: AbortSignal;
  /**
   * Saves a result too long for the model where this conversation's workspace tools read it
   * (src/files), and returns its workspace path: the model reads any part with read_file and can
   * post it whole with share_file. Absent: a long result is only cut.
   */
  keepFullOutput?(call: ToolCall, text: string): Promise<string>;
  /**
   * After a tool ran, before its result is recorded: what it may have written is attributed to the
   * people behind it (src/repos, who may countersign a merge). `outcome`: why it ran. An error fails
   * the call's turn rather than leave a write unattributed.
   */
  afterToolRun?(call: ToolCall, tool: AnyTool, outcome: 'allow' | 'grant' | 'approved'): Promise<void>;
}

/** A call its tool accepted: the tool and the arguments it will run with. */
interface AdmittedCall {
  tool: AnyTool;
  args: Record<string, unknown>;
}

function resultOf(call: ToolCall, output: ToolOutput): ToolResult {
  return { toolCallId: call.id, name: call.name, content: output.content, isError: output.isError ?? false };
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
  ctx: ToolCallContext,
  call: ToolCall,
  deps: ToolExecutionDeps,
  /** Why it runs without a card, for the progress line (a grant). */
  note?: string,
  /** Why it runs at all, for its span: the policy allowed it, a standing grant covers it, a person approved it. */
  outcome: 'allow' | 'grant' | 'approved' = 'allow',
): Promise<ToolResult> {
  const admitted = admitCall(call, deps.tools);
  if ('content' in admitted) return resultOf(call, admitted);
  const limitSeconds = timeLimitOf(
    admitted.tool,
    admitted.args,
    deps.settings.toolTimeoutSeconds ?? DEFAULT_TOOL_TIMEOUT_SECONDS,
  );
  const earlier = await settleEarlierRun(ctx, call, deps, admitted, limitSeconds);
  if (earlier) {
    // An earlier run (before a crash) may have written before its result was recorded.
    await deps.afterToolRun?.(call, admitted.tool, outcome);
    return resultOf(call, earlier);
  }

  const span = toolSpan({ ...call, args: admitted.args }, ctx.conversationId, outcome);
  let output = await withSpan(span.name, { kind: SpanKind.INTERNAL, attributes: span.attributes }, async (s) => {
    const ran = await runWithinLimit(ctx, call, deps, admitted, { limitSeconds, note });
    s.setAttributes(toolResult(ran));
    return ran;
  });
  await deps.afterToolRun?.(call, admitted.tool, outcome);
  // Any bytes a program, file or server gave are stored, and the model reads what was stored:
  // NULs and unpaired surrogates replaced, and a line saying so.
  output = { ...output, content: await withinBudget(call, storableTextMarked(output.content), deps) };
  await recordToolResult(deps.db, ctx.workItemId, call.id, output);
  metrics.toolCalls.inc({ tool: call.name, outcome: output.isError ? 'error' : 'ok' });
  return resultOf(call, output);
}

/** The line that names where a cut result was kept, and the room it takes from the budget (tokens). */
const KEPT_NOTE_TOKENS = 80;

/**
 * The result as the model gets it: whole when it fits, else cut (result-budget.ts) — and, where the
 * workspace can keep it, saved whole first, the cut result saying where. A save that fails leaves
 * the cut result as it was.
 */
async function withinBudget(call: ToolCall, text: string, deps: ToolExecutionDeps): Promise<string> {
  const maxTokens = deps.settings.toolResultMaxTokens ?? DEFAULT_RESULT_MAX_TOKENS;
  if (text.length <= maxTokens * CHARS_PER_TOKEN || !deps.keepFullOutput) return fitToBudget(text, maxTokens);
  const kept = await deps.keepFullOutput(call, text).catch((error: unknown) => {
    deps.log.warn({ err: error, tool: call.name }, 'could not keep a long tool result');
    return undefined;
  });
  if (!kept) return fitToBudget(text, maxTokens);
  const cut = fitToBudget(text, Math.max(1, maxTokens - KEPT_NOTE_TOKENS));
  return `${cut}\n[The whole result (${text.length} characters) is saved as ${kept}: read_file reads any part of it, and share_file posts it whole to the people here.]`;
}

/** The tool and arguments a call runs with, or the error the model hears instead (never run). */
function admitCall(call: ToolCall, tools: ToolRegistry): AdmittedCall | ToolOutput {
  const tool = tools.get(call.name);
  if (!tool) {
    const known = tools
      .list()
      .filter((t) => !t.hidden)
      .map((t) => t.name)
      .join(', ');
    return { content: `There is no tool named "${call.name}". Available tools: ${known}.`, isError: true };
  }
  if (call.argsError) {
    return {
      content: `Your arguments for ${call.name} were not valid JSON (${call.argsError}). Send them again as a JSON object.`,
      isError: true,
    };
  }
  const parsed = admitArgs(tool, call.args);
  if (!parsed.ok) return { content: `Invalid arguments for ${call.name}: ${parsed.problem}`, isError: true };
  return { tool, args: parsed.args };
}

/**
 * What an earlier run of this call (a replay) settles: its recorded output, or why it is not run
 * again. Undefined when the call may run now; its start is then recorded.
 */
async function settleEarlierRun(
  ctx: ToolCallContext,
  call: ToolCall,
  deps: ToolExecutionDeps,
  { tool, args }: AdmittedCall,
  limitSeconds: number,
): Promise<ToolOutput | undefined> {
  const previous = await findToolExecution(deps.db, ctx.workItemId, call.id, limitSeconds);
  if (previous?.status === 'finished') return previous.result;
  if (previous?.status === 'started' && (previous.overdue || !tool.idempotent)) {
    // Overdue: the worker that ran it most likely froze on this very input (and was declared dead),
    // so running it again would freeze this worker too. That holds for read-only tools as well.
    const content = previous.overdue
      ? `The ${call.name} call started earlier did not finish within its time limit of ${limitSeconds} s (the worker running it stopped responding). It was not run again. Try a narrower or simpler call instead.`
      : `The ${call.name} call was interrupted by a worker restart and its outcome is unknown. It was not run again. Check its effect before retrying.`;
    const output: ToolOutput = { content, isError: true };
    await recordToolResult(deps.db, ctx.workItemId, call.id, output);
    metrics.toolCalls.inc({ tool: call.name, outcome: 'error' });
    return output;
  }
  if (!previous) {
    const inserted = await recordToolStart(deps.db, ctx.workItemId, call.id, call.name, args);
    if (!inserted && !tool.idempotent) {
      return {
        content: `The ${call.name} call is already being handled elsewhere; it was not run twice.`,
        isError: true,
      };
    }
  }
  return undefined;
}

/** Runs the tool, shown as running, and abandons it (aborting its signal) past its time limit. */
async function runWithinLimit(
  ctx: ToolCallContext,
  call: ToolCall,
  deps: ToolExecutionDeps,
  { tool, args }: AdmittedCall,
  { limitSeconds, note }: { limitSeconds: number; note: string | undefined },
): Promise<ToolOutput> {
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
    const running = tool.execute(args, {
      workItemId: ctx.workItemId,
      conversationId: ctx.conversationId,
      requester: ctx.requester,
      ...(ctx.reply ? { reply: ctx.reply } : {}),
      ...(ctx.approvedContent ? { approvedContent: ctx.approvedContent } : {}),
      signal,
      log: deps.log.child({ tool: call.name, toolCallId: call.id }),
    });
    // An abandoned call may still settle later; nobody is listening then.
    running.catch(() => undefined);
    output = asOutput(await Promise.race([running, overdue]));
  } catch (error) {
    output = failureOutput(error, call, deps, limitSeconds);
  } finally {
    clearTimeout(timer);
    deps.sink.setStatus(undefined);
  }
  deps.sink.task?.({ ...task, status: output.isError ? 'error' : 'complete' });
  return output;
}

/** What the model hears of a tool that threw or ran out of time; a stopped turn's error propagates. */
function failureOutput(error: unknown, call: ToolCall, deps: ToolExecutionDeps, limitSeconds: number): ToolOutput {
  if (error instanceof ToolTimeLimitError) {
    deps.log.warn({ tool: call.name, toolCallId: call.id, limitSeconds }, 'tool call exceeded its time limit');
    return {
      content: `${call.name} did not finish within its time limit of ${limitSeconds} s and was abandoned. It will not be run again automatically. Try a narrower or simpler call instead.`,
      isError: true,
    };
  }
  if (deps.signal.aborted) throw error;
  return { content: `${call.name} failed: ${(error as Error).message}`, isError: true };
}
