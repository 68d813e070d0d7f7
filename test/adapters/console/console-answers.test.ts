import { describe, expect, it } from 'vitest';
import { cardPrompt, denialReason, parseCardAnswer } from '../../../src/adapters/console/card-answers.ts';
import type { ApprovalCard } from '../../../src/core/approval-card.ts';

const card = (calls: number, kind: ApprovalCard['kind'] = 'tools'): ApprovalCard => ({
  envelopeId: 'e',
  nonce: 'n'.repeat(32),
  kind,
  calls: Array.from({ length: calls }, (_, index) => ({
    index,
    id: `c${index}`,
    tool: 't',
    argsPretty: '{}',
    risk: 'medium' as const,
  })),
  planHashPrefix: 'abc',
  expiresAt: new Date(0),
  requesterLabel: 'me',
  state: 'pending',
  ...(kind === 'question' ? { question: 'Which?', options: ['a', 'b'] } : {}),
});

describe("the console's answers to a card", () => {
  it('reads "n <reason>" as a denial with that reason, and plain answers as before', () => {
    expect(denialReason(card(2), 'n wrong cluster, use staging')).toBe('wrong cluster, use staging');
    expect(denialReason(card(1), 'no: not during the freeze')).toBe('not during the freeze');
    expect(denialReason(card(2), 'n')).toBeUndefined();
    expect(denialReason(card(2), 'ny')).toBeUndefined();
    expect(parseCardAnswer(card(2), 'ny')).toEqual([
      { toolCallId: 'c0', approved: false },
      { toolCallId: 'c1', approved: true },
    ]);
    // A question is answered, not denied.
    expect(denialReason(card(1, 'question'), 'n because')).toBeUndefined();
    expect(cardPrompt(card(1))).toContain('n <reason>');
  });
});

describe('"Always allow here" at the console prompt', () => {
  const grantableAt = (card: ApprovalCard, ...indices: number[]): ApprovalCard => ({
    ...card,
    calls: card.calls.map((c) => (indices.includes(c.index) ? { ...c, grant: 'Always allow here: …' } : c)),
  });

  it('is offered by the prompt exactly where the card offers it', () => {
    expect(cardPrompt(grantableAt(card(1), 0))).toBe('approve? [y]es / [a]lways allow here / [n]o / n <reason>');
    expect(cardPrompt(card(1))).toBe('approve? [y]es / [n]o / n <reason>');
    expect(cardPrompt(grantableAt(card(3), 1))).toContain('a for always allowing call 2 here');
    expect(cardPrompt(grantableAt(card(3), 1))).toContain('e.g. yay');
  });

  it('reads `a` as approve-and-always-allow for a call that offers it', () => {
    expect(parseCardAnswer(grantableAt(card(1), 0), 'a')).toEqual([{ toolCallId: 'c0', approved: true, always: true }]);
    expect(parseCardAnswer(grantableAt(card(2), 0, 1), 'always')).toEqual([
      { toolCallId: 'c0', approved: true, always: true },
      { toolCallId: 'c1', approved: true, always: true },
    ]);
    expect(parseCardAnswer(grantableAt(card(3), 1), 'yan')).toEqual([
      { toolCallId: 'c0', approved: true },
      { toolCallId: 'c1', approved: true, always: true },
      { toolCallId: 'c2', approved: false },
    ]);
  });

  it('refuses `a` for a call the card offers no grant for, rather than approving it once', () => {
    expect(parseCardAnswer(card(1), 'a')).toBeUndefined();
    expect(parseCardAnswer(grantableAt(card(2), 1), 'a')).toBeUndefined();
    expect(parseCardAnswer(grantableAt(card(2), 1), 'ay')).toBeUndefined();
    expect(parseCardAnswer(card(1), 'approve')).toEqual([{ toolCallId: 'c0', approved: true }]);
  });
});
