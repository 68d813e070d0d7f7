import type { Queryable } from './db/pool.ts';

export interface UsageRow {
  day: string;
  conversation: string;
  provider: string;
  turns: number;
  rounds: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** Model usage per day and conversation, newest first (`countersign usage`). */
export async function usageSummary(db: Queryable, days: number): Promise<UsageRow[]> {
  const { rows } = await db.query<UsageRow>(
    `SELECT to_char(date_trunc('day', created_at), 'YYYY-MM-DD') AS day,
            conversation_id AS conversation,
            string_agg(DISTINCT provider, ',') AS provider,
            count(DISTINCT work_item_id)::int AS turns,
            count(*)::int AS rounds,
            sum(input_tokens)::int AS "inputTokens",
            sum(output_tokens)::int AS "outputTokens",
            sum(cache_read_tokens)::int AS "cacheReadTokens",
            sum(cache_write_tokens)::int AS "cacheWriteTokens"
     FROM countersign.model_rounds
     WHERE created_at >= date_trunc('day', now()) - make_interval(days => $1 - 1)
     GROUP BY 1, 2
     ORDER BY 1 DESC, sum(input_tokens + output_tokens) DESC`,
    [days],
  );
  return rows;
}

export function formatUsage(rows: UsageRow[]): string {
  if (rows.length === 0) return 'No model usage recorded in that period.';
  const header = ['day', 'conversation', 'provider', 'turns', 'rounds', 'input', 'output', 'cache read', 'cache write'];
  const body = rows.map((r) => [
    r.day,
    r.conversation,
    r.provider,
    String(r.turns),
    String(r.rounds),
    String(r.inputTokens),
    String(r.outputTokens),
    String(r.cacheReadTokens),
    String(r.cacheWriteTokens),
  ]);
  const totals = rows.reduce(
    (t, r) => ({
      turns: t.turns + r.turns,
      rounds: t.rounds + r.rounds,
      input: t.input + r.inputTokens,
      output: t.output + r.outputTokens,
      read: t.read + r.cacheReadTokens,
      write: t.write + r.cacheWriteTokens,
    }),
    { turns: 0, rounds: 0, input: 0, output: 0, read: 0, write: 0 },
  );
  body.push([
    'total',
    '',
    '',
    String(totals.turns),
    String(totals.rounds),
    String(totals.input),
    String(totals.output),
    String(totals.read),
    String(totals.write),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...body.map(line)].join('\n');
}
