import type { Message } from '../messages.ts';
import { estimateTokens } from './estimate.ts';
import { renderSummary, summarize, type ConversationSummary } from './summary.ts';

/** The history a turn starts from, as stored: the summary so far and the messages after it. */
export interface StoredHistory {
  summary: ConversationSummary | undefined;
  /** Messages after the summary, oldest first, with their row ids. */
  messages: Message[];
  ids: number[];
}

export interface CompactionSettings {
  /** Estimated tokens (summary + messages) past which older turns are compacted. */
  budgetTokens: number;
  /** What is kept verbatim after a compaction, as a share of the budget (default 0.3). */
  keepShare?: number;
  /** The most the summary may take, as a share of the budget (default 0.2). */
  summaryShare?: number;
}

export interface PreparedHistory {
  /** What the model is given: the summary (when there is one) as the first message, then the rest. */
  messages: Message[];
  /** A new summary to store, covering messages up to and including `throughId`. */
  compacted?: { summary: ConversationSummary; throughId: number; messages: number };
  tokens: number;
}

/** The summary as a message: a user message, the only role every provider accepts first. */
function summaryMessage(summary: ConversationSummary): Message {
  return { role: 'user', text: renderSummary(summary) };
}

/**
 * Where the history may be cut: before a user message. A user message never sits between a tool
 * call and its result, so no call/result pair is ever split, and what is kept starts where a
 * provider expects a conversation to start.
 */
function cutPoints(messages: Message[]): number[] {
  return messages.flatMap((m, i) => (m.role === 'user' && i > 0 ? [i] : []));
}

/**
 * Compaction instead of a sliding window. Between compactions the history only grows at its end, so
 * every earlier request is a prefix of the next one and a prompt cache keeps hitting. Once the
 * estimate passes the budget, the oldest turns are folded into the summary (once, stored) and
 * the newest turns, up to `keepShare` of the budget, stay verbatim; the summary is held to
 * `summaryShare`. A compaction rewrites the cached prefix from the summary on, so it leaves half the
 * budget free: the next one comes only after several turns.
 */
export function prepareHistory(stored: StoredHistory, settings: CompactionSettings): PreparedHistory {
  const { summary, messages, ids } = stored;
  const summaryTokens = summary ? estimateTokens(summaryMessage(summary)) : 0;
  const sizes = messages.map((m) => estimateTokens(m));
  const total = summaryTokens + sizes.reduce((a, b) => a + b, 0);
  const given = (s: ConversationSummary | undefined, kept: Message[]) => (s ? [summaryMessage(s), ...kept] : kept);
  if (total <= settings.budgetTokens) return { messages: given(summary, messages), tokens: total };

  const keep = settings.budgetTokens * (settings.keepShare ?? 0.3);
  // The earliest cut whose tail fits what is kept; with none (one huge last turn), the latest cut.
  const cuts = cutPoints(messages);
  let tail = 0;
  const suffix: number[] = [];
  for (let i = messages.length - 1; i >= 0; i--) suffix[i] = tail += sizes[i]!;
  const cut = cuts.find((i) => suffix[i]! <= keep) ?? cuts.at(-1);
  if (cut === undefined) return { messages: given(summary, messages), tokens: total };

  const next = summarize(summary, messages.slice(0, cut), settings.budgetTokens * (settings.summaryShare ?? 0.2));
  const kept = messages.slice(cut);
  const prepared = given(next, kept);
  return {
    messages: prepared,
    compacted: { summary: next, throughId: ids[cut - 1]!, messages: cut },
    tokens: prepared.reduce((a, m) => a + estimateTokens(m), 0),
  };
}
