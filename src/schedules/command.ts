import type { WorkCommandResult } from '../core/work-commands.ts';
import { Priority } from '../core/work-item.ts';
import { preview } from './scheduler.ts';
import { SCHEDULE_TASK } from './tool.ts';
import { readScheduleCommand } from './when.ts';

/**
 * `/schedule WHEN TASK` read into the work it starts (docs/schedules.md): a turn whose one call is
 * `schedule_task` with the WHEN and TASK as typed, so the command meets the same policy (kind
 * `schedule`) and the same card — the exact schedule, the next three runs, the task — as the model's
 * call, and the schedule exists only once the card is approved. No model round reads the text: a
 * WHEN that cannot be read is answered here, to the person alone, with an example.
 */
export function readScheduleWorkCommand(text: string, now: Date, minIntervalSeconds: number): WorkCommandResult {
  const read = readScheduleCommand(text, now, minIntervalSeconds);
  if (!read.ok) return read;
  return {
    ok: true,
    header: `Scheduling \`${read.whenText}\`: ${preview(read.task, 200)}`,
    type: 'CHAT',
    // A person waits for the card, as for a skill run.
    priority: Priority.CRITICAL,
    prompt: `/schedule ${read.whenText} ${read.task}`,
    payload: {},
    call: { name: SCHEDULE_TASK, args: { when: read.whenText, task: read.task } },
  };
}
