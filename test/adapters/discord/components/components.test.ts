import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  approvalCard,
  approvalCustomId,
  buttonLabel,
  decidedApprovalCard,
  expiredApprovalCard,
  parseApprovalCustomId,
  parseStopCustomId,
  replyButtonRows,
  stopButtonRow,
  stopCustomId,
  type ApiMessagePayload,
  type ApprovalCardInput,
} from '../../../../src/adapters/discord/components/index.ts';
import { LIMITS } from '../../../../src/adapters/discord/limits.ts';
import { FakeDiscord } from '../../../fakes/discord/index.ts';
import { ButtonPayload, buttonValue } from '../../../../src/core/buttons.ts';
import { parseStopButton, stopButtonValue } from '../../../../src/core/buttons.ts';

const NONCE = 'q1w2e3r4t5y6u7i8o9p0-_AbCdEf';
const EXPIRES = new Date('2030-01-01T00:10:00Z');

function card(calls: number, args = '{\n  "path": "/var/log"\n}'): ApprovalCardInput {
  return {
    nonce: NONCE,
    calls: Array.from({ length: calls }, (_, index) => ({
      index,
      tool: `tool_${index}`,
      argsPretty: args,
      risk: 'high' as const,
    })),
    planHashPrefix: '9f86d081',
    expiresAt: EXPIRES,
    requesterLabel: '<@1234567890>',
  };
}

const customIds = (p: ApiMessagePayload) => p.components.flatMap((r) => r.components.map((b) => b.custom_id));
const embedText = (p: ApiMessagePayload) =>
  p.embeds
    .map((e) =>
      [e.title, e.description, ...(e.fields ?? []).flatMap((f) => [f.name, f.value]), e.footer?.text].join('\n'),
    )
    .join('\n');

describe('custom ids', () => {
  it.each([
    [{ nonce: NONCE, decision: 'approve', call: 0 }, `${NONCE}.a0`],
    [{ nonce: NONCE, decision: 'deny', call: 3 }, `${NONCE}.d3`],
    [{ nonce: NONCE, decision: 'approve', call: 'all' }, `${NONCE}.A`],
    [{ nonce: NONCE, decision: 'deny', call: 'all' }, `${NONCE}.D`],
  ] as const)('encodes %o as %s and parses it back', (click, id) => {
    expect(approvalCustomId(click)).toBe(id);
    expect(parseApprovalCustomId(id)).toEqual(click);
  });

  it.each([
    'x',
    '.a0',
    `${NONCE}.z0`,
    `${NONCE}.a100`,
    `${NONCE}.o1`,
    `no.pe.a0`,
    'stop:abc',
    `${'n'.repeat(81)}.a0`,
    '',
  ])('rejects %j', (id) => {
    expect(parseApprovalCustomId(id)).toBeUndefined();
  });

  it('fits the longest nonce and decision into Discord’s 100-character custom_id', () => {
    const id = approvalCustomId({ nonce: 'n'.repeat(80), decision: 'approve', call: 99 });
    expect(id.length).toBeLessThanOrEqual(LIMITS.customId);
  });

  it('refuses to build an id from a nonce that could not be parsed back', () => {
    expect(() => approvalCustomId({ nonce: 'has.dot', decision: 'approve', call: 0 })).toThrow();
  });

  it('is the platform-neutral button value the approval service parses', () => {
    const serviceNonce = 'Q'.repeat(32);
    for (const [call, decision, code] of [
      ['all', 'approve', 'A'],
      ['all', 'deny', 'D'],
      [2, 'approve', 'a2'],
      [2, 'deny', 'd2'],
    ] as const) {
      const id = approvalCustomId({ nonce: serviceNonce, decision, call });
      expect(id).toBe(buttonValue(serviceNonce, code));
      expect(ButtonPayload.parse(id)).toEqual({ nonce: serviceNonce, decision: code });
    }
  });

  it('stops a turn with the same value the stop service parses', () => {
    const turn = '0b0f3c62-7f0e-4a8e-9d6a-2f6c1d9e4b11';
    expect(stopCustomId(turn)).toBe(stopButtonValue(turn));
    expect(parseStopButton(stopCustomId(turn))).toBe(turn);
  });
});

describe('buttons', () => {
  it('renders the Stop button as one danger button whose id names the turn', () => {
    const rows = stopButtonRow('turn-42');
    expect(rows).toEqual([{ type: 1, components: [{ type: 2, style: 4, label: 'Stop', custom_id: 'stop:turn-42' }] }]);
    expect(parseStopCustomId(rows[0]!.components[0]!.custom_id!)).toBe('turn-42');
  });

  it('packs reply buttons five to a row', () => {
    const rows = replyButtonRows(
      Array.from({ length: 7 }, (_, i) => ({ label: `B${i}`, value: `v${i}`, style: 'secondary' as const })),
    );
    expect(rows.map((r) => r.components.length)).toEqual([5, 2]);
  });

  it('refuses more buttons than five rows of five can hold', () => {
    const many = Array.from({ length: 26 }, (_, i) => ({ label: `B${i}`, value: `v${i}`, style: 'primary' as const }));
    expect(() => replyButtonRows(many)).toThrow(/at most 25/);
  });

  it('shortens a label to 80 characters', () => {
    expect(buttonLabel('x'.repeat(200))).toHaveLength(LIMITS.buttonLabel);
  });
});

describe('approval card', () => {
  it('shows tool, risk, arguments, plan hash and a relative expiry', () => {
    const p = approvalCard(card(1))[0]!;
    const text = `${p.content}\n${embedText(p)}`;
    expect(text).toContain('tool_0');
    expect(text).toContain('high');
    expect(text).toContain('"path": "/var/log"');
    expect(text).toContain('9f86d081');
    expect(text).toContain(`<t:${EXPIRES.getTime() / 1000}:R>`);
  });

  it('offers just Approve and Deny for a single call', () => {
    const p = approvalCard(card(1))[0]!;
    expect(p.components).toHaveLength(1);
    expect(p.components[0]!.components.map((b) => b.label)).toEqual(['Approve', 'Deny', 'Deny with reason…']);
    expect(customIds(p)).toEqual([`${NONCE}.A`, `${NONCE}.D`, `${NONCE}.R`]);
  });

  it('offers Approve/Deny per call plus Approve all/Deny all for several calls', () => {
    const p = approvalCard(card(3))[0]!;
    expect(p.components).toHaveLength(4);
    expect(customIds(p)).toEqual([
      `${NONCE}.a0`,
      `${NONCE}.d0`,
      `${NONCE}.a1`,
      `${NONCE}.d1`,
      `${NONCE}.a2`,
      `${NONCE}.d2`,
      `${NONCE}.A`,
      `${NONCE}.D`,
      `${NONCE}.R`,
    ]);
  });

  it('spreads twelve calls over three messages, each call with its own row, Approve all only on the last', () => {
    const pages = approvalCard(card(12));
    expect(pages).toHaveLength(3);
    expect(pages.map((p) => p.components.length)).toEqual([4, 4, 5]);
    expect(pages.flatMap(customIds)).toEqual([
      ...Array.from({ length: 12 }, (_, i) => [`${NONCE}.a${i}`, `${NONCE}.d${i}`]).flat(),
      `${NONCE}.A`,
      `${NONCE}.D`,
      `${NONCE}.R`,
    ]);
    // Each message shows exactly the calls whose buttons it carries.
    pages.forEach((p, i) => {
      expect(p.embeds[0]!.fields!.map((f) => f.name.split(' ')[0])).toEqual([1, 2, 3, 4].map((k) => `#${i * 4 + k}`));
    });
    expect(pages[2]!.content).toMatch(/Approve all.*#1–#12/);
  });

  it('keeps the layout once calls are decided one by one, dropping only their buttons', () => {
    const pages = approvalCard(card(6), [{ index: 4, decision: 'deny' }]);
    expect(pages).toHaveLength(2);
    expect(pages.flatMap(customIds)).not.toContain(`${NONCE}.a4`);
    expect(pages.flatMap(customIds)).toContain(`${NONCE}.a5`);
    expect(JSON.stringify(pages[1]!.embeds)).toContain('denied');
  });

  it('wraps links in the content so Discord never previews them (a card cannot suppress embeds)', () => {
    const [p] = approvalCard({ ...card(1), requesterLabel: 'eve https://evil.example/x?s=1' });
    expect(p!.content).toContain('<https://evil.example/x?s=1>');
    expect(p!.flags ?? 0).toBe(0);
  });

  it('keeps huge arguments within every embed limit, cut with a note and a closed fence', () => {
    const p = approvalCard(card(4, 'y'.repeat(20_000)))[0]!;
    const fields = p.embeds[0]!.fields!;
    for (const f of fields) {
      expect(f.value.length).toBeLessThanOrEqual(LIMITS.embedFieldValue);
      expect(f.value.match(/```/g)).toHaveLength(2);
      expect(f.value).toMatch(/characters, cut\n```$/);
    }
    expect(embedText(p).length).toBeLessThanOrEqual(LIMITS.embedTotal);
  });

  it('does not let backticks in the arguments close the code block', () => {
    const p = approvalCard(card(1, 'before ``` after @everyone'))[0]!;
    const value = p.embeds[0]!.fields![0]!.value;
    expect(value.match(/```/g)).toHaveLength(2);
    expect(value).not.toContain('@everyone');
  });

  it('never pings: every card sends allowed_mentions with nothing to parse', () => {
    for (const p of [
      approvalCard(card(2))[0]!,
      decidedApprovalCard(card(2), [], 'x')[0]!,
      expiredApprovalCard(card(2))[0]!,
    ]) {
      expect(p.allowed_mentions).toEqual({ parse: [] });
    }
  });

  it('removes the buttons once decided and shows each call’s outcome', () => {
    const [p] = decidedApprovalCard(
      card(2),
      [
        { index: 0, decision: 'approve' },
        { index: 1, decision: 'deny' },
      ],
      '<@42>',
    );
    if (!p) throw new Error('no card');
    expect(p.components).toEqual([]);
    const names = p.embeds[0]!.fields!.map((f) => f.name);
    expect(names[0]).toContain('approved');
    expect(names[1]).toContain('denied');
    expect(p.content).toContain('<@42>');
  });

  it('headlines a unanimous approval as Approved', () => {
    const p = decidedApprovalCard(card(1), [{ index: 0, decision: 'approve' }], 'Bob')[0]!;
    expect(p.content).toMatch(/Approved/);
  });

  it('removes the buttons once expired and says nothing ran', () => {
    const p = expiredApprovalCard(card(2))[0]!;
    expect(p.components).toEqual([]);
    expect(p.content).toMatch(/expired/i);
    expect(p.content).toMatch(/nothing ran/);
  });
});

describe('cards Discord accepts', () => {
  let fake: FakeDiscord;
  beforeAll(async () => {
    fake = await FakeDiscord.start({
      buckets: { 'POST /channels/:channel_id/messages': { limit: 100, windowSeconds: 1 } },
    });
  });
  afterAll(async () => fake.close());

  const post = (payload: ApiMessagePayload) =>
    fetch(`${fake.restUrl}/v10/channels/${fake.scene.channelId}/messages`, {
      method: 'POST',
      headers: { Authorization: `Bot ${fake.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(payload),
    });

  it.each([
    ['one call', () => approvalCard(card(1))[0]!],
    [
      'four calls with huge arguments and details',
      () =>
        approvalCard({
          ...card(4, 'z'.repeat(9000)),
          calls: card(4, 'z'.repeat(9000)).calls.map((c) => ({ ...c, detail: 'd'.repeat(9000) })),
        })[0]!,
    ],
    ...Array.from({ length: 7 }, (_, i): [string, () => ApiMessagePayload] => [
      `message ${i + 1} of thirty calls with huge arguments`,
      () => approvalCard(card(30, 'a'.repeat(5000)))[i]!,
    ]),
    ['a decided card', () => decidedApprovalCard(card(3), [{ index: 0, decision: 'approve' }], 'Bob')[0]!],
    ['an expired card', () => expiredApprovalCard(card(3))[0]!],
    [
      'a stop button',
      (): ApiMessagePayload => ({
        content: 'Working…',
        embeds: [],
        components: stopButtonRow('t1'),
        allowed_mentions: { parse: [] },
      }),
    ],
  ])('accepts %s', async (_name, build) => {
    const res = await post(build());
    expect(res.status, JSON.stringify(await res.clone().json())).toBe(200);
  });
});
