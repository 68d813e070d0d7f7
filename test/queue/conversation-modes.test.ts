import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedProvider } from '../../src/agent/providers/scripted.ts';
import type { ModelProvider, ModelRequest, RoundCallbacks } from '../../src/agent/model.ts';
import { defineTool } from '../../src/agent/tools/tool.ts';
import type { ConversationMode, WorkItem } from '../../src/core/work-item.ts';
import { slowTool } from '../helpers/tools.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { png } from '../files/samples.ts';

/** The scripted model, remembering every request (what the model saw, in which request). */
class RecordingProvider implements ModelProvider {
  readonly name = 'scripted';
  readonly model = 'script';
  readonly requests: ModelRequest[] = [];
  readonly #inner: ScriptedProvider;
  constructor(inner: ScriptedProvider) {
    this.#inner = inner;
  }
  streamRound(request: ModelRequest, callbacks: RoundCallbacks, signal: AbortSignal) {
    this.requests.push(structuredClone(request));
    return this.#inner.streamRound(request, callbacks, signal);
  }
}

const runs: string[] = [];
const slowCheck = slowTool('slow_check', runs, { arg: 'target' });

const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys (test)',
  version: '1',
  input: z.object({ target: z.string() }),
  approval: 'always',
  risk: 'medium',
  idempotent: false,
  async execute({ target }) {
    runs.push(`deploy ${target}`);
    return `deployed ${target}`;
  },
});

const provider = new RecordingProvider(
  new ScriptedProvider({
    rules: [
      {
        match: '^check',
        rounds: [
          { toolCalls: [{ name: 'slow_check', args: { target: 'prod' } }] },
          { text: 'checked: {{lastToolResult}}' },
        ],
      },
      {
        match: '^deploy',
        rounds: [{ toolCalls: [{ name: 'deploy', args: { target: 'prod' } }] }, { text: 'done: {{lastToolResult}}' }],
      },
      { rounds: [{ text: 'answer to: {{lastUser}}', delayMs: 5 }] },
    ],
  }),
);

const ALICE = { platform: 'test', userId: 'U1' };
const BOB = { platform: 'test', userId: 'U2' };

describe('messages that arrive while the bot is working', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ provider, tools: [slowCheck, deploy], env: { CONVERSATION_COLLECT_WINDOW_MS: '400' } });
  });
  afterAll(() => h.stop());

  let n = 0;
  const conversation = () => `modes-${++n}`;
  const say = (conv: string, text: string, mode: ConversationMode, requester = ALICE): Promise<WorkItem> =>
    h.say(conv, text, { mode, requester });
  const row = async (id: string) =>
    (await h.app.pool.query(`SELECT status, result, error FROM countersign.work_items WHERE id = $1`, [id]))
      .rows[0] as {
      status: string;
      result: { text?: string; takenInto?: string } | null;
      error: string | null;
    };
  const toolStarted = (target: string, count: number) =>
    waitFor(
      async () => (runs.filter((r) => r === target).length >= count ? true : undefined),
      10_000,
      'the tool to start',
    );
  /** The user messages of every model request for this conversation's turns, in order. */
  const userTextsOf = (text: string) =>
    provider.requests
      .filter((r) => r.messages.some((m) => m.role === 'user' && m.text.includes(text)))
      .map((r) => r.messages.filter((m) => m.role === 'user').map((m) => (m.role === 'user' ? m.text : '')));

  it('steer: the new message joins the running turn after its tool finishes; one answer, nothing twice', async () => {
    runs.length = 0;
    const conv = conversation();
    const first = await say(conv, 'check prod [steer]', 'steer');
    await toolStarted('prod', 1);
    const second = await say(conv, 'also mention the logs [steer]', 'steer');
    const done = await h.settled(first.id);
    expect(done.status).toBe('done');
    expect(done.result?.text).toContain('answer to: also mention the logs [steer]');
    // The tool ran once and its result was kept: the model saw it, then the new message.
    expect(runs).toEqual(['prod']);
    const last = provider.requests.filter((r) => JSON.stringify(r.messages).includes('[steer]')).at(-1)!;
    expect(last.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(JSON.stringify(last.messages[2])).toContain('prod is fine');
    expect((await row(second.id)).status).toBe('done');
    expect((await row(second.id)).result).toEqual({ takenInto: first.id });
    // One turn answered; the history holds both messages once.
    const { rows } = await h.app.pool.query(
      `SELECT message->>'text' AS text FROM countersign.messages WHERE conversation_id = $1 AND message->>'role' = 'user' ORDER BY id`,
      [conv],
    );
    expect(rows.map((r) => r.text)).toEqual(['check prod [steer]', 'also mention the logs [steer]']);
  });

  it('steer takes nobody else’s message: another person’s message waits for its own turn', async () => {
    runs.length = 0;
    const conv = conversation();
    const first = await say(conv, 'check prod [other]', 'steer');
    await toolStarted('prod', 1);
    const bobs = await say(conv, 'bob asks [other]', 'steer', BOB);
    expect((await h.settled(first.id)).result?.text).toBe('checked: prod is fine');
    expect((await h.settled(bobs.id)).result?.text).toBe('answer to: bob asks [other]');
  });

  it('steer leaves a command’s call to its own turn: it is ruled there, not read as text', async () => {
    runs.length = 0;
    const conv = conversation();
    const first = await say(conv, 'check prod [command]', 'steer');
    await toolStarted('prod', 1);
    const command = await h.say(conv, '/deploy staging', {
      mode: 'steer',
      requester: ALICE,
      input: { prompt: '/deploy staging', call: { name: 'deploy', args: { target: 'staging' } } },
    });
    expect((await h.settled(first.id)).result?.text).toBe('checked: prod is fine');
    // Its own turn: the call waits for its card (deploy asks), and no model read it as a message.
    expect((await h.settled(command.id)).status).toBe('awaiting_approval');
    expect(provider.requests.some((r) => JSON.stringify(r.messages).includes('/deploy staging'))).toBe(false);
  });

  it('steer: a message with files joins the running turn with them, read before it joins', async () => {
    runs.length = 0;
    const conv = conversation();
    const first = await say(conv, 'check prod [steer-files]', 'steer');
    await toolStarted('prod', 1);
    h.outbound.files.set('F-steer-csv', Buffer.from('a,b\n1,2\n'));
    h.outbound.files.set('F-steer-png', png());
    const second = await h.say(conv, 'and these [steer-files]', {
      mode: 'steer',
      requester: ALICE,
      input: {
        prompt: 'and these [steer-files]',
        files: [
          { id: 'F-steer-csv', name: 'table.csv' },
          { id: 'F-steer-png', name: 'shot.png' },
        ],
      },
    });
    expect((await h.settled(first.id)).result?.text).toContain('answer to: and these [steer-files]');
    expect((await row(second.id)).result).toEqual({ takenInto: first.id });
    const last = provider.requests.filter((r) => JSON.stringify(r.messages).includes('[steer-files]')).at(-1)!;
    const joined = last.messages.at(-1)!;
    if (joined.role !== 'user') throw new Error('expected the steering message last');
    expect(joined.text).toMatch(/^and these \[steer-files\]\n\nFiles sent with this message:\n/);
    expect(joined.text).toMatch(/"table\.csv": saved as inbox\/\S+\/table\.csv \(text, 8 bytes\)/);
    expect(joined.attachments?.map((a) => [a.kind, a.name])).toEqual([['image', 'shot.png']]);
  });

  it('steer: a mention whose files are looked up joins with them too', async () => {
    runs.length = 0;
    const conv = conversation();
    const first = await say(conv, 'check prod [mention-files]', 'steer');
    await toolStarted('prod', 1);
    h.outbound.files.set('F-steer', Buffer.from('a,b\n1,2\n'));
    h.outbound.messageFileRefs.set('M-steer', [{ id: 'F-steer', name: 'table.csv' }]);
    const mention = await h.say(conv, 'and this table [mention-files]', {
      mode: 'steer',
      requester: ALICE,
      input: { prompt: 'and this table [mention-files]', filesOfMessage: 'M-steer' },
    });
    expect((await h.settled(first.id)).result?.text).toContain('answer to: and this table [mention-files]');
    expect((await row(mention.id)).result).toEqual({ takenInto: first.id });
    const seen = userTextsOf('and this table [mention-files]').at(-1)!.at(-1)!;
    expect(seen).toMatch(/"table\.csv": saved as inbox\/\S+\/table\.csv \(text, 8 bytes\)/);
  });

  it('queue: the new message is the next turn', async () => {
    runs.length = 0;
    const conv = conversation();
    const first = await say(conv, 'check prod [queue]', 'queue');
    await toolStarted('prod', 1);
    const second = await say(conv, 'and then this [queue]', 'queue');
    expect((await h.settled(first.id)).result?.text).toBe('checked: prod is fine');
    expect((await h.settled(second.id)).result?.text).toBe('answer to: and then this [queue]');
  });

  it('interrupt: the running turn stops at its next safe point; the new one sees the history', async () => {
    runs.length = 0;
    const conv = conversation();
    const first = await say(conv, 'check prod [interrupt]', 'interrupt');
    await toolStarted('prod', 1);
    const second = await say(conv, 'forget that [interrupt]', 'interrupt');
    const stopped = await h.settled(first.id);
    expect(stopped.status).toBe('cancelled');
    expect((await row(first.id)).error).toBe('superseded by a newer message');
    expect((await h.settled(second.id)).result?.text).toBe('answer to: forget that [interrupt]');
    // The running tool was not aborted, and ran once.
    expect(runs).toEqual(['prod']);
    const seen = userTextsOf('forget that [interrupt]').at(-1)!;
    expect(seen).toEqual(['check prod [interrupt]', 'forget that [interrupt]']);
    const shown = h.outbound.channelText(conv).join('\n');
    expect(shown).toContain('Stopped here: your newer message takes over.');
  });

  it('collect: a quick burst of three lines is one turn and one answer', async () => {
    const conv = conversation();
    const a = await say(conv, 'line one [collect]', 'collect');
    const b = await say(conv, 'line two [collect]', 'collect');
    const c = await say(conv, 'line three [collect]', 'collect');
    const done = await h.settled(a.id);
    expect(done.result?.text).toBe('answer to: line one [collect]\nline two [collect]\nline three [collect]');
    expect((await row(b.id)).result).toEqual({ takenInto: a.id });
    expect((await row(c.id)).result).toEqual({ takenInto: a.id });
    const firstRequest = userTextsOf('line one [collect]')[0]!;
    expect(firstRequest).toEqual(['line one [collect]\nline two [collect]\nline three [collect]']);
  });

  it('collect: 50 conversations with rapid follow-ups make one turn per burst and lose no message', async () => {
    const bursts = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const conv = conversation();
        const items: WorkItem[] = [];
        // Sequential within a conversation (one person typing), concurrent across conversations.
        for (const line of ['a', 'b', 'c']) items.push(await say(conv, `burst ${i} ${line}`, 'collect'));
        return { conv, items };
      }),
    );
    for (const { items } of bursts) await h.settled(items[0]!.id, 60_000);
    let answered = 0;
    let taken = 0;
    for (const { conv, items } of bursts) {
      const rows = await Promise.all(items.map((it) => row(it.id)));
      const turns = rows.filter((r) => r.result?.text !== undefined);
      expect(turns, conv).toHaveLength(1);
      answered += turns.length;
      taken += rows.filter((r) => r.result?.takenInto === items[0]!.id).length;
      // Every line reached the model, once, in order.
      const i = conv;
      expect(turns[0]!.result!.text!.match(/burst \d+ [abc]/g), i).toHaveLength(3);
    }
    expect(answered).toBe(50);
    expect(taken).toBe(100);
  });

  it('a pending card is superseded by a newer message: its nonce is refused, and the turn re-plans', async () => {
    runs.length = 0;
    const conv = conversation();
    const first = await say(conv, 'deploy prod [card]', 'steer');
    expect((await h.settled(first.id)).status).toBe('awaiting_approval');
    const envelope = await waitFor(
      async () =>
        (
          await h.app.pool.query(
            `SELECT id, nonce FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
            [first.id],
          )
        ).rows[0] as { id: string; nonce: string } | undefined,
      10_000,
      'the card',
    );
    const second = await say(conv, 'no, staging instead [card]', 'steer');
    // Superseded as the message was enqueued, before any worker took it.
    const { rows } = await h.app.pool.query(`SELECT status FROM countersign.approval_envelopes WHERE id = $1`, [
      envelope.id,
    ]);
    expect(rows[0]?.status).toBe('superseded');
    expect((await row(first.id)).status).toBe('cancelled');
    const click = await h.app.approvals.click(`${envelope.nonce}.A`, ALICE);
    expect(click).toEqual({
      ok: false,
      reason: 'This request was superseded by a newer message from its requester; nothing was run.',
    });
    expect((await h.settled(second.id)).result?.text).toBe('answer to: no, staging instead [card]');
    expect(runs).toEqual([]);
    // The new turn saw what the old one had asked, with its withdrawn call named in words.
    const seen = provider.requests.filter((r) => JSON.stringify(r.messages).includes('staging instead')).at(-1)!;
    const texts = seen.messages.map((m) => `${m.role}: ${'text' in m ? m.text : ''}`);
    expect(texts[0]).toBe('user: deploy prod [card]');
    expect(texts[1]).toMatch(/^assistant: .*I asked to run deploy; that request was withdrawn/);
    expect(texts.at(-1)).toBe('user: no, staging instead [card]');
    const audit = await h.app.pool.query(
      `SELECT event FROM countersign.approval_audit WHERE envelope_id = $1 ORDER BY id`,
      [envelope.id],
    );
    expect(audit.rows.map((r) => r.event)).toContain('superseded');
  });

  it('queue mode keeps a pending card', async () => {
    const conv = conversation();
    const first = await say(conv, 'deploy prod [keep]', 'queue');
    expect((await h.settled(first.id)).status).toBe('awaiting_approval');
    const second = await say(conv, 'meanwhile [keep]', 'queue');
    expect((await h.settled(second.id)).status).toBe('done');
    const { rows } = await h.app.pool.query(
      `SELECT status FROM countersign.approval_envelopes WHERE work_item_id = $1`,
      [first.id],
    );
    expect(rows[0]?.status).toBe('pending');
  });
});
