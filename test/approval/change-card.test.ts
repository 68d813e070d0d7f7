/**
 * The change card as text with buttons, for a platform without a card renderer of its own (issue
 * #33): Merge into <base> / Discard / Deny with reason / Full diff, and never "Always allow here".
 */
import { describe, expect, it } from 'vitest';
import { allCallsButtons, cardButtons, cardText } from '../../src/approval/card.ts';
import type { ApprovalCard } from '../../src/core/approval-card.ts';
import { decodeButton, fullDiffValue } from '../../src/core/buttons.ts';

const NONCE = 'Qa7Zx9_k2-Qa7Zx9_k2-Qa7Zx9_k2-Qa';

function changeCard(base = 'main', overrides: Partial<ApprovalCard> = {}): ApprovalCard {
  return {
    envelopeId: 'env-change',
    nonce: NONCE,
    kind: 'tools',
    calls: [
      {
        index: 0,
        id: 'call-merge',
        tool: 'merge_change',
        argsPretty: '{"repo":"api","commit":"ffffff"}',
        risk: 'high',
        grant: 'Always allow `merge_change` here',
      },
    ],
    planHashPrefix: 'c0ffee12',
    expiresAt: new Date('2030-01-01T00:00:00Z'),
    requesterLabel: 'alice',
    state: 'pending',
    change: { approveLabel: `Merge into ${base}`, denyLabel: 'Discard', fullDiffValue: fullDiffValue(NONCE) },
    ...overrides,
  };
}

describe('the change card as text with buttons', () => {
  it('labels its buttons in the change’s words and adds Full diff, with no standing grant', () => {
    const buttons = cardButtons(changeCard());
    expect(buttons).toEqual([
      { label: 'Merge into main', value: `${NONCE}.A`, style: 'primary' },
      { label: 'Discard', value: `${NONCE}.D`, style: 'danger' },
      { label: 'Deny with reason…', value: `${NONCE}.R`, style: 'secondary' },
      { label: 'Full diff', value: `${NONCE}.V`, style: 'secondary' },
    ]);
    expect(decodeButton(buttons[3]!.value)).toEqual({ verb: 'full-diff', nonce: NONCE });
    expect(cardText(changeCard())).not.toContain('Always allow');
  });

  it('still offers Always allow on an ordinary card of the same call', () => {
    const { change: _change, ...ordinary } = changeCard();
    expect(allCallsButtons(ordinary).map((b) => b.label)).toEqual([
      'Approve',
      'Always allow here',
      'Deny',
      'Deny with reason…',
    ]);
  });

  it('cuts a long base branch name to the shorter platform label limit, marking the cut', () => {
    const [merge] = cardButtons(changeCard(`release/${'x'.repeat(200)}`));
    expect(merge!.label.length).toBe(75);
    expect(merge!.label.endsWith('…')).toBe(true);
  });

  it('has no buttons once decided', () => {
    expect(
      cardButtons(changeCard('main', { state: 'decided', decisions: [{ index: 0, approved: true, by: 'bob' }] })),
    ).toEqual([]);
  });
});
