import type { Queryable } from '../../db/pool.ts';
import type { Requester } from '../../core/person.ts';
import type { Message } from '../../agent/messages.ts';

type ItemStatus = 'queued' | 'running' | 'awaiting_approval' | 'done' | 'failed' | 'cancelled';

export interface StartedRow {
  status: ItemStatus;
  item: unknown;
  attempts: number;
  stopped_by: Requester | null;
  checkpoint_version: number | null;
  checkpoint: unknown;
  /** The messages after the conversation's summary (all of them when it has none), newest `historyLimit`. */
  history: Message[];
  history_ids: Array<number | string>;
  /** The conversation's compacted summary, if it has one (src/agent/history). */
  summary: unknown;
}

/**
 * Marks the item running and reads everything the turn starts from — the item, its stop request,
 * its checkpoint and the conversation's recent history — in one round trip. No row: the item is
 * already at rest.
 */
export async function startWorkItem(
  db: Queryable,
  workItemId: string,
  historyLimit: number,
): Promise<StartedRow | undefined> {
  const { rows } = await db.query<StartedRow>({
    name: 'cs_start_work_item',
    text: `WITH started AS (
       UPDATE countersign.work_items SET status = 'running', started_at = coalesce(started_at, now()), attempts = attempts + 1
       WHERE id = $1 AND status IN ('queued', 'running')
       RETURNING status, item, attempts, stopped_by, conversation_id
     )
     SELECT s.status, s.item, s.attempts, s.stopped_by,
            c.format_version AS checkpoint_version, c.state AS checkpoint,
            h.history, h.history_ids, sm.summary
     FROM started s
     LEFT JOIN countersign.turn_checkpoints c ON c.work_item_id = $1
     LEFT JOIN countersign.conversation_summaries sm ON sm.conversation_id = s.conversation_id
     CROSS JOIN LATERAL (
       SELECT coalesce(jsonb_agg(recent.message ORDER BY recent.id), '[]'::jsonb) AS history,
              coalesce(array_agg(recent.id ORDER BY recent.id), '{}') AS history_ids
       FROM (SELECT id, message FROM countersign.messages m
             WHERE m.conversation_id = s.conversation_id AND m.id > coalesce(sm.through_message_id, 0)
             ORDER BY id DESC LIMIT $2) recent
     ) h`,
    values: [workItemId, historyLimit],
  });
  return rows[0];
}
