import type { Queryable } from '../../db/pool.ts';
import type { Message } from '../../agent/messages.ts';
import { toJsonb } from '../../core/storable-text.ts';
import { taskRule } from './task-rule.ts';

export interface Settlement {
  status: 'awaiting_approval' | 'done' | 'failed' | 'cancelled';
  result?: unknown;
  error?: string;
  /** Messages to append to the conversation's history. */
  messages?: Message[];
  /** Drop the turn's checkpoint (it is complete). */
  deleteCheckpoint?: boolean;
}

/**
 * Puts a work item into a resting status, appends its messages to the history, hands the
 * conversation to its next item and drops the checkpoint — one statement
 * (countersign.settle_work_item, migration 006: the item's status, its messages, the hand-over, the
 * checkpoint's deletion in turn_checkpoints), so all of it commits or none of it does. Works alone or
 * inside a caller's transaction.
 */
export async function settleWorkItem(
  db: Queryable,
  item: { id: string; conversationId: string },
  settlement: Settlement,
): Promise<void> {
  await db.query({
    name: 'cs_settle_work_item',
    text: 'SELECT countersign.settle_work_item($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
    values: [
      item.id,
      item.conversationId,
      settlement.status,
      settlement.result === undefined ? null : toJsonb(settlement.result),
      settlement.error ?? null,
      settlement.messages && settlement.messages.length > 0 ? toJsonb(settlement.messages) : null,
      settlement.deleteCheckpoint ?? false,
      ...taskRule(),
    ],
  });
}
