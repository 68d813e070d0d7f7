/**
 * The change card in the terminal (issue #33): the prompt's answers in the change's own words, no
 * standing grant offered, and Full diff's file printed whole, with what could steer the terminal shown.
 */
import { describe, expect, it } from 'vitest';
import { ConsoleCardRenderer } from '../../../src/adapters/console/card-renderer.ts';
import { ConsoleOutbound } from '../../../src/adapters/console/outbound.ts';
import type { ApprovalCard } from '../../../src/core/approval-card.ts';
import { fullDiffValue } from '../../../src/core/buttons.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';

const NONCE = 'n'.repeat(32);
const target: ReplyTarget = { platform: 'console', channel: 'session-1' };

function changeCard(overrides: Partial<ApprovalCard> = {}): ApprovalCard {
  return {
    envelopeId: 'env-change',
    nonce: NONCE,
    kind: 'tools',
    calls: [
      {
        index: 0,
        id: 'call-merge',
        tool: 'merge_change',
        argsPretty: '{ "repo": "api", … }',
        argsFull: JSON.stringify({ repo: 'api', branch: 'countersign/1a2b3c4d', commit: 'f'.repeat(40) }, null, 2),
        risk: 'high',
        detail: '2 files changed\nM  src/a.ts  +3 −1\nA  bin/run.sh  (executable)',
        grant: 'Always allow `merge_change` in this conversation',
      },
    ],
    planHashPrefix: 'c0ffee12',
    expiresAt: new Date(Date.now() + 3_600_000),
    requesterLabel: 'alice',
    state: 'pending',
    change: { approveLabel: 'Merge into main', denyLabel: 'Discard', fullDiffValue: fullDiffValue(NONCE) },
    ...overrides,
  };
}

function session() {
  const outbound = new ConsoleOutbound();
  const shown: string[] = [];
  outbound.onChange((_id, text) => shown.push(text));
  return { outbound, cards: new ConsoleCardRenderer(outbound), shown };
}

describe('the change card at the console', () => {
  it('says what y and n do in the change’s words, prints the arguments whole, and offers no grant', async () => {
    const { cards, shown } = session();
    await cards.show(target, changeCard());
    const text = shown.at(-1)!;
    expect(text).toContain('y: **Merge into main** · n: **Discard**');
    expect(text).toContain('"commit": "ffff');
    expect(text).toContain('bin/run.sh  (executable)');
    expect(text).not.toContain('Always allow');
  });

  it('drops the answers line once the card is decided', async () => {
    const { cards, outbound } = session();
    const pending = changeCard();
    const { messageId } = await cards.show(target, pending);
    await cards.show(
      target,
      { ...pending, state: 'decided', decisions: [{ index: 0, approved: true, by: 'bob' }], decidedAt: new Date() },
      messageId,
    );
    const text = outbound.text(messageId)!;
    expect(text).toContain('approved by bob');
    expect(text).not.toContain('y: **Merge into main**');
  });

  it('prints a shared 2 MB diff whole, after its comment', async () => {
    const { outbound, shown } = session();
    const line = '+const value = "a line of the diff";\n';
    const diff = line.repeat(Math.ceil((2 * 1024 * 1024) / line.length));
    await outbound.upload(target, {
      filename: 'countersign-ffffff.diff',
      content: Buffer.from(diff),
      comment: 'Full diff of countersign/1a2b3c4d',
    });
    const text = shown.at(-1)!;
    expect(text.startsWith('Full diff of countersign/1a2b3c4d\n')).toBe(true);
    expect(text).toContain(`countersign-ffffff.diff (${Buffer.byteLength(diff)} bytes)`);
    // Every line of the diff, none cut.
    expect(text).toContain(diff.slice(0, -1));
    expect(text.endsWith('── end of countersign-ffffff.diff ──')).toBe(true);
  });

  it('shows, rather than sends, what could steer the terminal in a shared file', async () => {
    const { outbound, shown } = session();
    await outbound.upload(target, {
      filename: 'evil.diff',
      content: Buffer.from('+ok\n+\u001b[2J\u001b]0;pwned\u0007\n+\u202eright-to-left\n'),
    });
    const text = shown.at(-1)!;
    for (const c of ['\u001b', '\u0007', '\u202e']) expect(text).not.toContain(c);
    expect(text).toContain('⟨U+001B⟩[2J');
    expect(text).toContain('⟨U+202E⟩right-to-left');
  });
});
