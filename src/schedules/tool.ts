import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ReplyTarget } from '../core/reply-target.ts';
import type { Pool } from '../db/pool.ts';
import { defineBuiltinTool, type ToolOutput } from '../agent/tools/tool.ts';
import { readReplyOf } from '../queue/turn-lifecycle.ts';
import { createSchedule, describeScheduleRequest, type ScheduleLimits } from './manage.ts';
import { shortId, type RecordScheduleEvent } from './scheduler.ts';
import { formatSlot, zoneOf } from './when.ts';
import { whenOf } from './store.ts';

export const SCHEDULE_TASK = 'schedule_task';

const ScheduleTaskArgs = z.object({
  when: z
    .string()
    .min(1)
    .max(200)
    .describe(
      'When to run: a cron pattern and an IANA time zone ("0 9 * * 1-5 Europe/Berlin"), an interval ("every 15m"), or once ("in 2h", "2026-12-01 09:00 America/New_York")',
    ),
  task: z.string().min(1).max(4000).describe('What to do at each run, as the person would ask for it'),
  background: z.boolean().default(false).describe('Run at low priority, behind interactive work'),
  catch_up: z
    .enum(['latest', 'none'])
    .default('latest')
    .describe('After downtime: make up the latest missed run (latest) or skip it (none)'),
});

/**
 * `schedule_task` (kind `schedule`, docs/schedules.md): the model's way to schedule work when a person
 * asks in plain words, and `/schedule`'s. Its card shows WHEN, the next three runs and the task before
 * the schedule exists; approved, the schedule belongs to the requester and runs where they asked.
 */
export function createScheduleTool(
  pool: Pool,
  limits: ScheduleLimits,
  record: RecordScheduleEvent,
  clock = () => new Date(),
) {
  return defineBuiltinTool({
    name: SCHEDULE_TASK,
    kind: 'schedule',
    description:
      'Schedules a task to run later or repeatedly in this conversation, as the person asking: each run is a new turn with the task as its message, under the approval rules in force then. Use it when a person asks for something "every weekday at 9", "in two hours", "every 15 minutes".',
    version: '1',
    input: ScheduleTaskArgs,
    approval: 'always',
    risk: 'medium',
    // The schedule's id comes from the call's turn and arguments: a replay finds it made already.
    idempotent: true,
    describeForApproval: async (args) =>
      describeScheduleRequest(
        { when: args.when, task: args.task, background: args.background, catchUp: args.catch_up },
        clock(),
        limits.minIntervalSeconds,
      ),
    async execute(args, ctx): Promise<ToolOutput | string> {
      const stored = await readReplyOf(pool, ctx.workItemId);
      const place = ReplyTarget.safeParse(stored?.reply);
      if (!place.success) return { content: 'I could not tell where this conversation is.', isError: true };
      const { messageId: _answer, ...where } = place.data;
      const made = await createSchedule(
        pool,
        limits,
        record,
        {
          id: scheduleIdOf(ctx.workItemId, args),
          owner: ctx.requester,
          place: where,
          conversationId: ctx.conversationId,
          when: args.when,
          task: args.task,
          background: args.background,
          catchUp: args.catch_up,
        },
        clock(),
      );
      if (!made.ok) return { content: made.message, isError: true };
      const { schedule } = made;
      const next = schedule.next_run_at ? formatSlot(schedule.next_run_at, zoneOf(whenOf(schedule))) : 'never';
      return `Scheduled ${shortId(schedule.id)} ("${schedule.when_text}"); the first run is ${next}. \`/countersign schedules\` lists, pauses and deletes it.`;
    },
  });
}

/** A uuid-shaped id for one call: the same turn and arguments give the same schedule. */
function scheduleIdOf(workItemId: string, args: unknown): string {
  const hex = createHash('sha256')
    .update(`${workItemId}\n${JSON.stringify(args)}`)
    .digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
