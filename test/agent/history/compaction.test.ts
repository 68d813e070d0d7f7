import { describe, expect, it } from 'vitest';
import type { Message } from '../../../src/agent/messages.ts';
import { prepareHistory, type StoredHistory } from '../../../src/agent/history/compaction.ts';
import { estimateTokens } from '../../../src/agent/history/estimate.ts';
import { identifiersIn, renderSummary, summarize } from '../../../src/agent/history/summary.ts';

/** One turn: a request, two tool rounds (the second a card decided by a person), an answer. */
function turn(n: number, opts: { denied?: boolean } = {}): Message[] {
  const filler = `log line for build ${n} `.repeat(40);
  return [
    { role: 'user', text: `turn ${n}: check instance i-0abc${n}def and deploy billing-api v2.${n}.1` },
    {
      role: 'assistant',
      text: 'Looking.',
      toolCalls: [{ id: `t${n}a`, name: 'describe_instance', args: { id: `i-0abc${n}def` } }],
    },
    { role: 'tool', results: [{ toolCallId: `t${n}a`, name: 'describe_instance', content: filler, isError: false }] },
    {
      role: 'assistant',
      text: '',
      toolCalls: [{ id: `t${n}b`, name: 'deploy', args: { service: 'billing-api', version: `v2.${n}.1` } }],
    },
    {
      role: 'tool',
      results: [
        opts.denied
          ? {
              toolCallId: `t${n}b`,
              name: 'deploy',
              content: 'This call was not run: freeze until Monday',
              isError: true,
              decision: 'denied',
            }
          : {
              toolCallId: `t${n}b`,
              name: 'deploy',
              content: `deployed as release r-${n}00`,
              isError: false,
              decision: 'approved',
            },
      ],
    },
    {
      role: 'assistant',
      text: opts.denied ? `Not deployed (turn ${n}).` : `Deployed v2.${n}.1 (turn ${n}).`,
      toolCalls: [],
    },
  ];
}

function stored(turns: number, opts: { deniedTurn?: number } = {}): StoredHistory {
  const messages = Array.from({ length: turns }, (_, i) => turn(i + 1, { denied: opts.deniedTurn === i + 1 })).flat();
  return { summary: undefined, messages, ids: messages.map((_, i) => i + 1) };
}

/** Every tool result in `messages` answers a call made earlier in `messages`. */
function pairsWhole(messages: Message[]): boolean {
  const calls = new Set<string>();
  for (const m of messages) {
    if (m.role === 'assistant') for (const c of m.toolCalls) calls.add(c.id);
    if (m.role === 'tool' && m.results.some((r) => !calls.has(r.toolCallId))) return false;
  }
  return true;
}

describe('history compaction', () => {
  it('leaves a history within the budget alone', () => {
    const history = stored(2);
    const prepared = prepareHistory(history, { budgetTokens: 100_000 });
    expect(prepared.compacted).toBeUndefined();
    expect(prepared.messages).toEqual(history.messages);
  });

  it('folds the oldest turns into a summary, cutting only before a request, so no call is split from its result', () => {
    const history = stored(12, { deniedTurn: 2 });
    const total = history.messages.reduce((a, m) => a + estimateTokens(m), 0);
    const budget = Math.floor(total * 0.8);
    const prepared = prepareHistory(history, { budgetTokens: budget });
    const compacted = prepared.compacted!;
    expect(compacted).toBeDefined();
    const kept = history.messages.slice(compacted.messages);
    // The kept part starts at a request and is whole: every result has its call.
    expect(kept[0]!.role).toBe('user');
    expect(pairsWhole(kept)).toBe(true);
    expect(kept.reduce((a, m) => a + estimateTokens(m), 0)).toBeLessThanOrEqual(budget * 0.3);
    expect(compacted.throughId).toBe(history.ids[compacted.messages - 1]);
    expect(prepared.messages.slice(1)).toEqual(kept);
    expect(prepared.tokens).toBeLessThan(budget);
    // What the summary must keep: ids, names, versions, approvals given and denied (with the reason).
    const text = (prepared.messages[0] as { text: string }).text;
    expect(text).toContain('i-0abc1def');
    expect(text).toContain('billing-api');
    expect(text).toContain('v2.1.1');
    expect(text).toContain('r-100');
    expect(text).toMatch(
      /deploy \{"service":"billing-api","version":"v2\.1\.1"\} → approved, ran: deployed as release r-100/,
    );
    expect(text).toMatch(/deploy \{"service":"billing-api","version":"v2\.2\.1"\} → not run — freeze until Monday/);
  });

  it('never splits a pair even when the newest turn alone is over the budget', () => {
    const history = stored(3);
    const prepared = prepareHistory(history, { budgetTokens: 50 });
    const kept = history.messages.slice(prepared.compacted!.messages);
    expect(kept[0]).toEqual(history.messages[12]);
    expect(pairsWhole(kept)).toBe(true);
  });

  it('keeps every earlier request a byte-exact prefix of the next until the next compaction', () => {
    const first = stored(12);
    const budget = Math.floor(first.messages.reduce((a, m) => a + estimateTokens(m), 0) / 2);
    const compactedOnce = prepareHistory(first, { budgetTokens: budget }).compacted!;
    // What the next turns read from the database: the stored summary, then the messages after it.
    let messages = first.messages.slice(compactedOnce.messages);
    let previous: string | undefined;
    let turns = 12;
    for (;;) {
      const prepared = prepareHistory(
        { summary: compactedOnce.summary, messages, ids: messages.map((_, i) => 1000 + i) },
        { budgetTokens: budget },
      );
      if (prepared.compacted) break;
      const bytes = JSON.stringify(prepared.messages);
      if (previous) expect(bytes.startsWith(previous.slice(0, -1))).toBe(true);
      previous = bytes;
      turns += 1;
      messages = [...messages, ...turn(turns)];
    }
    expect(turns).toBeGreaterThan(13);
  });

  it('holds the summary to its share: older turns lose their detail first, decisions go last', () => {
    const messages = Array.from({ length: 30 }, (_, i) => turn(i + 1, { denied: i === 0 })).flat();
    const full = summarize(undefined, messages);
    const capped = summarize(undefined, messages, estimateTokens(renderSummary(full)) / 3);
    expect(estimateTokens(renderSummary(capped))).toBeLessThanOrEqual(estimateTokens(renderSummary(full)) / 3);
    expect(capped.droppedTurns).toBeGreaterThan(0);
    expect(capped.turns.at(-1)).toEqual(full.turns.at(-1));
    // The first turn's denial is still there although its turn line is gone.
    expect(renderSummary(capped)).toMatch(/v2\.1\.1"\} → not run — freeze until Monday/);
  });

  it('keeps an earlier summary as it was when compacting again', () => {
    const a = summarize(undefined, turn(1));
    const b = summarize(a, turn(2));
    expect(b.turns.slice(0, a.turns.length)).toEqual(a.turns);
    expect(renderSummary(b).split('\n').slice(1, 4)).toEqual(renderSummary(a).split('\n').slice(1, 4));
    expect(b.messages).toBe(12);
  });

  it('finds identifiers and leaves plain words', () => {
    expect(identifiersIn('restart `web-1` on 10.0.0.7, see PR #1234 and https://ci.example/run/9 for i-0abc1')).toEqual(
      expect.arrayContaining(['web-1', '10.0.0.7', '#1234', 'https://ci.example/run/9', 'i-0abc1']),
    );
    expect(identifiersIn('please restart the service now')).toEqual([]);
  });
});
