import type { Logger } from 'pino';
import type { Config } from '../../config.ts';
import type { Pool } from '../../db/pool.ts';
import { withoutAttachments, type Message } from '../../agent/messages.ts';
import { prepareHistory } from '../../agent/history/compaction.ts';
import { saveSummary, summaryFromRow } from '../../agent/history/summary-store.ts';
import type { StartedRow } from '../turn-lifecycle.ts';
import type { WorkItem } from '../../core/work-item.ts';
import { metrics } from '../../metrics.ts';

/** AGENT_HISTORY_TOKENS (the compaction budget; 0 turns compaction off) and AGENT_HISTORY_MESSAGES. */
type HistorySettings = Pick<Config, 'AGENT_HISTORY_TOKENS' | 'AGENT_HISTORY_MESSAGES'>;

/**
 * With compaction on, the rows read at turn start are the messages after the summary, which
 * compaction keeps within its budget; this only bounds a conversation from before compaction.
 */
const HISTORY_ROWS_WITH_COMPACTION = 1000;

/** How many history rows starting a turn reads. */
export function historyRowsToRead(settings: HistorySettings): number {
  return settings.AGENT_HISTORY_TOKENS > 0 ? HISTORY_ROWS_WITH_COMPACTION : settings.AGENT_HISTORY_MESSAGES;
}

/**
 * The history the model is given. With compaction (AGENT_HISTORY_TOKENS > 0): the stored summary
 * and the messages after it, compacted once more (and stored) when they pass the budget; without,
 * the newest AGENT_HISTORY_MESSAGES messages.
 */
export async function historyOf(
  pool: Pool,
  settings: HistorySettings,
  item: WorkItem,
  row: StartedRow,
  log: Logger,
): Promise<Message[]> {
  const first = firstCompleteExchange(row.history);
  const messages = row.history.slice(first).map(withoutAttachments);
  if (settings.AGENT_HISTORY_TOKENS === 0) return messages;
  const prepared = prepareHistory(
    { summary: summaryFromRow(row.summary), messages, ids: row.history_ids.slice(first).map(Number) },
    { budgetTokens: settings.AGENT_HISTORY_TOKENS },
  );
  if (prepared.compacted) {
    const { summary, throughId, messages: folded } = prepared.compacted;
    await saveSummary(pool, item.conversationId, summary, throughId);
    metrics.historyCompactions.inc();
    log.info({ folded, tokensAfter: prepared.tokens }, 'compacted the conversation history');
  }
  return prepared.messages;
}

/**
 * History handed to the model must not start in the middle of a tool exchange (a tool result without
 * its call), which providers reject: where the first user message is (leading messages before it are
 * dropped; with none, all are).
 */
function firstCompleteExchange(history: Array<{ role: string }>): number {
  const first = history.findIndex((m) => m.role === 'user');
  return first < 0 ? history.length : first;
}
