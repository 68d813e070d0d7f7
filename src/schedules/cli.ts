import type { Requester } from '../core/person.ts';
import type { Pool } from '../db/pool.ts';
import { changeSchedule, describeSchedules, findByShortId } from './manage.ts';
import type { RecordScheduleEvent } from './scheduler.ts';
import { HISTORY_RUNS } from './history.ts';
import { listSchedules, recentRuns, type RunRow } from './store.ts';

const USAGE =
  'Usage: countersign schedules list [--json] | countersign schedules history ID | countersign schedules pause|resume|delete ID';

export interface SchedulesCommandIO {
  out(line: string): void;
  err(line: string): void;
}

/**
 * `countersign schedules list|pause|resume|delete` (docs/schedules.md): the operator's shell sees and
 * changes every schedule; each change is audited with `operator` as the actor.
 */
export async function schedulesCommand(
  pool: Pool,
  record: RecordScheduleEvent,
  operator: Requester,
  args: string[],
  io: SchedulesCommandIO,
  now = new Date(),
): Promise<number> {
  const [verb, target, ...rest] = args;
  if (verb === 'list') {
    const all = await listSchedules(pool, {}, 10_000);
    if (target === '--json') {
      io.out(JSON.stringify(all));
      return 0;
    }
    for (const line of await describeSchedules(pool, all)) io.out(line);
    if (all.length === 0) io.out('No schedules.');
    return 0;
  }
  if (
    (verb !== 'pause' && verb !== 'resume' && verb !== 'delete' && verb !== 'history') ||
    !target ||
    rest.length > 0
  ) {
    io.err(USAGE);
    return 2;
  }
  const schedule = await findByShortId(pool, target);
  if (!schedule) {
    io.err(`No single schedule has the id ${target} (give the 8 characters \`schedules list\` shows, or more).`);
    return 1;
  }
  if (verb === 'history') {
    const runs = await recentRuns(pool, schedule.id, HISTORY_RUNS);
    for (const run of runs) io.out(historyLine(run));
    if (runs.length === 0) io.out('No runs yet.');
    return 0;
  }
  const result = await changeSchedule(pool, record, verb, schedule.id, undefined, now, operator);
  if (!result.ok) {
    io.err(result.reason);
    return 1;
  }
  io.out(result.text);
  return 0;
}

/**
 * One run of the history: its slot, outcome (and why), its work item, where it answered and the
 * platform's link to that answer (recorded when the run came to rest).
 */
function historyLine(run: RunRow): string {
  const where = run.reply
    ? `${run.reply.platform}:${run.reply.channel}${run.reply.thread ? `/${run.reply.thread}` : ''}`
    : '';
  const detail = run.detail ? ` (${run.detail})` : '';
  return `${run.slot.toISOString()}  ${run.outcome}${detail}  ${run.work_item_id ?? '-'}  ${where}  ${run.link ?? ''}`.trimEnd();
}
