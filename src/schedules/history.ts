import type { Pool } from '../db/pool.ts';
import { refusalFor, type IsApprover } from './manage.ts';
import type { Requester } from '../core/person.ts';
import { preview, shortId } from './scheduler.ts';
import { findSchedule, recentRuns, whenOf, type RunRow } from './store.ts';
import { formatSlot, zoneOf } from './when.ts';

/** Runs a schedule's history shows, newest first (docs/schedules.md). */
export const HISTORY_RUNS = 20;

/** One run as the chat shows it: when, outcome (and why), and a link to the thread it answered in. */
function historyEntry(run: RunRow, zone: string): string {
  const detail = run.detail ? ` (${run.detail})` : '';
  const link = run.link ? ` — [open the thread](${run.link})` : '';
  return `• ${formatSlot(run.slot, zone)} — ${run.outcome}${detail}${link}`;
}

/**
 * A schedule's last HISTORY_RUNS runs for `by` — its owner or an approver where it runs — as
 * Markdown for them alone: each run's slot, outcome and a link to where it answered.
 */
export async function scheduleHistory(
  pool: Pool,
  id: string,
  by: { person: Requester; isApprover: IsApprover },
): Promise<{ ok: true; text: string } | { ok: false; reason: string }> {
  const schedule = await findSchedule(pool, id);
  if (!schedule) return { ok: false, reason: `There is no schedule ${shortId(id)}.` };
  const refused = refusalFor(schedule, by, 'see the history of');
  if (refused) return { ok: false, reason: refused };
  const runs = await recentRuns(pool, schedule.id, HISTORY_RUNS);
  const zone = zoneOf(whenOf(schedule));
  const title = `**Schedule ${shortId(schedule.id)}** ("${schedule.when_text}": ${preview(schedule.task, 80)})`;
  if (runs.length === 0) return { ok: true, text: `${title} has not run yet.` };
  return {
    ok: true,
    text: [
      `${title}, its last ${runs.length} run${runs.length === 1 ? '' : 's'}:`,
      ...runs.map((r) => historyEntry(r, zone)),
    ].join('\n'),
  };
}
