import type { Queryable } from '../db/pool.ts';
import type { ModelRound } from './model.ts';
import type { ToolOutput } from './tools/tool.ts';
import { TURN_STATE_VERSION, TurnState } from './turn-state.ts';
import { toJsonb } from '../core/storable-text.ts';

/**
 * Reads and writes a turn's durable state: countersign.turn_checkpoints, messages, tool_executions
 * and model_rounds (src/db/table-owners.ts). One SQL statement (one round trip) per function; the
 * ones on every turn's path are named, so each connection parses and plans them once. Also writing
 * them, from src/queue/turn-lifecycle.ts: countersign.settle_work_item (migration 006) appends a
 * settled turn's messages and drops its checkpoint; countersign.supersede_pending_cards (017)
 * appends a superseded turn's withdrawn history.
 */

export async function loadCheckpoint(db: Queryable, workItemId: string): Promise<TurnState | undefined> {
  const { rows } = await db.query<{ format_version: number; state: unknown }>(
    'SELECT format_version, state FROM countersign.turn_checkpoints WHERE work_item_id = $1',
    [workItemId],
  );
  const row = rows[0];
  return row ? checkpointFromRow(row.format_version, row.state) : undefined;
}

/** A stored checkpoint's state, if there is one and this version of the code wrote it. */
export function checkpointFromRow(formatVersion: number | null, state: unknown): TurnState | undefined {
  // A checkpoint written by another version of the code is not trusted: start the turn afresh.
  if (formatVersion !== TURN_STATE_VERSION) return undefined;
  const parsed = TurnState.safeParse(state);
  return parsed.success ? parsed.data : undefined;
}

/** A model round whose usage is recorded together with the checkpoint that follows it. */
export interface RoundRecord {
  conversationId: string;
  round: number;
  answer: ModelRound;
}

const UPSERT_CHECKPOINT = `INSERT INTO countersign.turn_checkpoints (work_item_id, format_version, round, state)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (work_item_id) DO UPDATE
       SET format_version = EXCLUDED.format_version, round = EXCLUDED.round, state = EXCLUDED.state, updated_at = now()`;

/**
 * Saves the turn's state. With `round`, the model round's usage is recorded in the same statement
 * (one round trip; both commit together).
 */
export async function saveCheckpoint(
  db: Queryable,
  workItemId: string,
  state: TurnState,
  round?: RoundRecord,
): Promise<void> {
  const checkpoint = [workItemId, TURN_STATE_VERSION, state.round, toJsonb(state)];
  if (!round) {
    await db.query({ name: 'cs_save_checkpoint', text: UPSERT_CHECKPOINT, values: checkpoint });
    return;
  }
  await db.query({
    name: 'cs_save_checkpoint_and_round',
    text: `WITH model_round AS (
       INSERT INTO countersign.model_rounds
         (work_item_id, round, conversation_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, fallbacks)
       VALUES ($1, $5, $6, $7, $8, $9, $10, $11, $12, $13)
       ON CONFLICT (work_item_id, round) DO NOTHING
     )
     ${UPSERT_CHECKPOINT}`,
    values: [...checkpoint, ...roundValues(round)],
  });
}

function roundValues({ round, conversationId, answer }: RoundRecord): unknown[] {
  return [
    round,
    conversationId,
    answer.provider,
    answer.model,
    answer.usage.inputTokens,
    answer.usage.outputTokens,
    answer.usage.cacheReadTokens,
    answer.usage.cacheWriteTokens,
    toJsonb(answer.fallbacks),
  ];
}

export type ToolExecution =
  | { status: 'finished'; result: ToolOutput }
  /** `overdue`: started longer ago than its time limit, by the database's clock. */
  | { status: 'started'; overdue: boolean }
  | undefined;

/**
 * The recorded execution of a tool call, if any. Whether a started one is overdue is decided by the
 * database's clock, so workers whose clocks disagree still agree on it.
 */
export async function findToolExecution(
  db: Queryable,
  workItemId: string,
  toolCallId: string,
  timeLimitSeconds: number,
): Promise<ToolExecution> {
  const { rows } = await db.query<{ status: 'started' | 'finished'; result: ToolOutput | null; overdue: boolean }>({
    name: 'cs_find_tool_execution',
    text: `SELECT status, result, now() > started_at + make_interval(secs => $3::double precision) AS overdue
     FROM countersign.tool_executions WHERE work_item_id = $1 AND tool_call_id = $2`,
    values: [workItemId, toolCallId, timeLimitSeconds],
  });
  const row = rows[0];
  if (!row) return undefined;
  return row.status === 'finished' && row.result
    ? { status: 'finished', result: row.result }
    : { status: 'started', overdue: row.overdue };
}

/** Records that a tool is about to run. Returns false if it was already recorded (a replay). */
export async function recordToolStart(
  db: Queryable,
  workItemId: string,
  toolCallId: string,
  tool: string,
  args: unknown,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO countersign.tool_executions (work_item_id, tool_call_id, tool, args, status)
     VALUES ($1, $2, $3, $4, 'started') ON CONFLICT DO NOTHING`,
    [workItemId, toolCallId, tool, toJsonb(args)],
  );
  return rowCount === 1;
}

export async function recordToolResult(
  db: Queryable,
  workItemId: string,
  toolCallId: string,
  result: ToolOutput,
): Promise<void> {
  await db.query(
    `UPDATE countersign.tool_executions SET status = 'finished', result = $3, finished_at = now()
     WHERE work_item_id = $1 AND tool_call_id = $2`,
    [workItemId, toolCallId, toJsonb(result)],
  );
}

export async function recordModelRound(db: Queryable, workItemId: string, record: RoundRecord): Promise<void> {
  await db.query(
    `INSERT INTO countersign.model_rounds
       (work_item_id, round, conversation_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, fallbacks)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (work_item_id, round) DO NOTHING`,
    [workItemId, ...roundValues(record)],
  );
}

/** One day's rounds of one model in one conversation (`countersign usage`, src/usage/summary.ts). */
export interface ModelUsage {
  day: string;
  conversation: string;
  provider: string;
  model: string;
  /** The conversation's turns that day, across all its models. */
  turns: number;
  rounds: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/**
 * Model rounds of the last `days` days (today included), per day, conversation and model — per model
 * since prices are per model; a conversation's turns are counted across its models.
 */
export async function readModelUsage(db: Queryable, days: number): Promise<ModelUsage[]> {
  const { rows } = await db.query<ModelUsage>(
    `WITH r AS (
       SELECT to_char(date_trunc('day', created_at), 'YYYY-MM-DD') AS day, conversation_id, provider, model,
              work_item_id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens
       FROM countersign.model_rounds
       WHERE created_at >= date_trunc('day', now()) - make_interval(days => $1 - 1)
     ), turns AS (
       SELECT day, conversation_id, count(DISTINCT work_item_id)::int AS turns FROM r GROUP BY 1, 2
     )
     SELECT r.day, r.conversation_id AS conversation, string_agg(DISTINCT r.provider, ',') AS provider, r.model,
            max(t.turns) AS turns, count(*)::int AS rounds,
            sum(r.input_tokens)::int AS "inputTokens", sum(r.output_tokens)::int AS "outputTokens",
            sum(r.cache_read_tokens)::int AS "cacheReadTokens", sum(r.cache_write_tokens)::int AS "cacheWriteTokens"
     FROM r JOIN turns t USING (day, conversation_id)
     GROUP BY r.day, r.conversation_id, r.model`,
    [days],
  );
  return rows;
}
