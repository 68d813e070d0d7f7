/**
 * The Slack approval card's layout: a section per call with that call's own buttons, Approve all /
 * Deny all last, decisions in place of buttons once decided, and Slack's limits on big plans.
 */
import type { KnownBlock } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import { approvalCardBlocks, approvalCardPages } from '../../../src/adapters/slack/blocks.ts';
import { LIMITS } from '../../../src/adapters/slack/limits.ts';
import type { ApprovalCard } from '../../../src/core/approval-card.ts';

const NONCE = 'Qa7Zx9_k2-Qa7Zx9_k2-Qa7Zx9_k2-Qa';

function card(calls: number, overrides: Partial<ApprovalCard> = {}): ApprovalCard {
  return {
    envelopeId: 'env-1',
    nonce: NONCE,
    kind: 'tools',
    calls: Array.from({ length: calls }, (_, index) => ({
      index,
      id: `call-${index}`,
      tool: `tool_${index}`,
      argsPretty: JSON.stringify({ service: `api-${index}` }, null, 2),
      risk: 'high' as const,
    })),
    planHashPrefix: 'a1b2c3d4',
    expiresAt: new Date('2026-01-02T03:04:05Z'),
    requesterLabel: 'Alice',
    state: 'pending',
    ...overrides,
  };
}

type Button = { action_id: string; value: string; text: { text: string } };
const texts = (blocks: KnownBlock[]) =>
  blocks.map((b) => (b.type === 'section' ? (b.text?.text ?? '') : b.type === 'context' ? JSON.stringify(b) : ''));
const actionRows = (blocks: KnownBlock[]) =>
  blocks.flatMap((b) => (b.type === 'actions' ? [(b.elements as Button[]).map((e) => e.text.text)] : []));
const buttons = (blocks: KnownBlock[]) => blocks.flatMap((b) => (b.type === 'actions' ? (b.elements as Button[]) : []));

describe('the Slack approval card', () => {
  it('gives each call its own section and Approve/Deny, then Approve all / Deny all', () => {
    const blocks = approvalCardBlocks(card(2));
    const callSections = texts(blocks).filter((t) => /^\d\. `tool_\d`/.test(t));
    expect(callSections).toHaveLength(2);
    expect(callSections[0]).toContain('"service": "api-0"');
    expect(actionRows(blocks)).toEqual([
      ['Approve 1', 'Deny 1'],
      ['Approve 2', 'Deny 2'],
      ['Approve all', 'Deny all', 'Deny with reason…'],
    ]);
    // Each call's row follows its own section.
    const firstRow = blocks.findIndex((b) => b.type === 'actions');
    expect(texts(blocks)[firstRow - 1]).toContain('tool_0');
    expect(buttons(blocks).map((b) => b.value)).toEqual(
      ['a0', 'd0', 'a1', 'd1', 'A', 'D', 'R'].map((d) => `${NONCE}.${d}`),
    );
    const ids = buttons(blocks).map((b) => b.action_id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('asks about a single call with one Approve / Deny row', () => {
    expect(actionRows(approvalCardBlocks(card(1)))).toEqual([['Approve', 'Deny', 'Deny with reason…']]);
  });

  it('shows the diff a call would apply in its own section, and escapes what Slack would parse', () => {
    const c = card(1);
    c.calls[0]!.argsPretty = '{ "path": "a<b>&c.txt" }';
    c.calls[0]!.detail = '--- a/x\n+++ b/x\n@@ -1 +1 @@\n-Map<K, V>\n+Map<K, W>';
    const sections = texts(approvalCardBlocks(c));
    expect(sections.some((t) => t.includes('a&lt;b&gt;&amp;c.txt'))).toBe(true);
    expect(sections.some((t) => t.startsWith('```') && t.includes('+Map&lt;K, W&gt;'))).toBe(true);
    expect(sections.join('\n')).not.toMatch(/<b>|<K,/);
  });

  it('cuts huge arguments inside the section limit and says how much was cut', () => {
    const c = card(1);
    c.calls[0]!.argsPretty = '<&>'.repeat(4000);
    const section = texts(approvalCardBlocks(c)).find((t) => t.includes('tool_0'))!;
    expect(section.length).toBeLessThanOrEqual(LIMITS.sectionText);
    expect(section).toMatch(/… \(\d+ more characters\)\n```$/);
  });

  it('once decided, shows who decided each call and no buttons', () => {
    const blocks = approvalCardBlocks(
      card(2, {
        state: 'decided',
        decidedAt: new Date('2026-01-02T03:00:00Z'),
        decisions: [
          { index: 0, approved: true, by: 'Alice' },
          { index: 1, approved: false, by: 'Bob' },
        ],
      }),
    );
    expect(actionRows(blocks)).toEqual([]);
    const all = texts(blocks).join('\n');
    expect(all).toContain('approved by Alice');
    expect(all).toContain('denied by Bob');
    expect(all).toContain('decided <!date^');
  });

  it('drops the buttons of calls already decided one by one', () => {
    const blocks = approvalCardBlocks(card(3, { decisions: [{ index: 1, approved: true, by: 'Alice' }] }));
    expect(actionRows(blocks)).toEqual([
      ['Approve 1', 'Deny 1'],
      ['Approve 3', 'Deny 3'],
      ['Approve all', 'Deny all', 'Deny with reason…'],
    ]);
  });

  it('says why an expired card ran nothing, without buttons', () => {
    const blocks = approvalCardBlocks(card(2, { state: 'expired' }));
    expect(actionRows(blocks)).toEqual([]);
    expect(texts(blocks).join('\n')).toContain('Expired');
  });

  it('shows every call of a 30-call plan over three messages, each inside 50 blocks, Approve all only on the last', () => {
    const pages = approvalCardPages(card(30, { calls: card(30).calls.map((c) => ({ ...c, detail: 'd' })) }));
    expect(pages).toHaveLength(3);
    for (const page of pages) expect(page.length).toBeLessThanOrEqual(LIMITS.blocks);
    const shown = pages.flatMap((p) => texts(p).filter((t) => /^\d+\. `tool_\d+`/.test(t)));
    expect(shown).toHaveLength(30);
    expect(pages.slice(0, -1).every((p) => !actionRows(p).some((r) => r.includes('Approve all')))).toBe(true);
    expect(actionRows(pages.at(-1)!).at(-1)).toEqual(['Approve all', 'Deny all', 'Deny with reason…']);
    expect(texts(pages[0]!).join('\n')).toMatch(/Calls 1–12 of 30 · continued below/);
  });

  it('offers "Full arguments" beside a call whose arguments the card had to cut', () => {
    const cut = card(1, {
      calls: [{ ...card(1).calls[0]!, argsPretty: 'head … ✂ … tail', argsFull: 'head middle tail' }],
    });
    expect(actionRows(approvalCardBlocks(cut))[0]).toEqual(['Full arguments']);
    expect(buttons(approvalCardBlocks(cut))[0]!.value).toBe(`${NONCE}.f0`);
    // Not cut: no button.
    expect(actionRows(approvalCardBlocks(card(1)))).toEqual([['Approve', 'Deny', 'Deny with reason…']]);
  });

  it('puts the expiry in a date token each reader sees in their own time zone', () => {
    const footer = texts(approvalCardBlocks(card(1))).find((t) => t.includes('plan'))!;
    expect(footer).toContain('<!date^1767323045^{date_short_pretty} at {time}|2026-01-02T03:04:05.000Z>');
  });
});
