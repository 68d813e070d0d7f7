import { describe, expect, it } from 'vitest';
import { cardPrompt, denialReason, parseCardAnswer } from '../../src/adapters/console/cards.ts';
import type { ApprovalCard } from '../../src/core/approval-card.ts';

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
