import type { Queryable } from '../../db/pool.ts';
import { ConversationSummary } from './summary.ts';
import { toJsonb } from '../../core/storable-text.ts';

/**
 * Stores a conversation's summary. A summary only ever moves forward: an older one (a replayed
 * turn that compacted the same messages again) never replaces a newer one.
 */
export async function saveSummary(
  db: Queryable,
  conversationId: string,
  summary: ConversationSummary,
  throughMessageId: number,
): Promise<void> {
  await db.query(
    `INSERT INTO countersign.conversation_summaries (conversation_id, through_message_id, summary)
     VALUES ($1, $2, $3)
     ON CONFLICT (conversation_id) DO UPDATE
       SET through_message_id = EXCLUDED.through_message_id, summary = EXCLUDED.summary,
           compactions = countersign.conversation_summaries.compactions + 1, updated_at = now()
       WHERE countersign.conversation_summaries.through_message_id < EXCLUDED.through_message_id`,
    [conversationId, throughMessageId, toJsonb(summary)],
  );
}

/** A stored summary, if it parses; one this version cannot read is ignored (the history is then longer). */
export function summaryFromRow(value: unknown): ConversationSummary | undefined {
  // Most conversations have none: no parse for the common case.
  if (value === null || value === undefined) return undefined;
  const parsed = ConversationSummary.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}
