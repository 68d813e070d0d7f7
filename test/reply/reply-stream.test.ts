import { describe, expect, it, vi } from 'vitest';
import { ReplyStream } from '../../src/reply/reply-stream.ts';
import { createLogger } from '../../src/log.ts';
import { RecordingOutbound } from '../helpers/recording-outbound.ts';
import { BudgetedOutbound } from './budgeted-outbound.ts';
import { openFenceAt } from '../../src/reply/split.ts';
import type { PartialEdit } from '../../src/reply/rate-bucket.ts';

const log = createLogger('silent');
const target = { platform: 'test', channel: 'c1' };

describe('streaming a reply', () => {
  it('coalesces many deltas into few edits and ends with the complete text', async () => {
    const outbound = new RecordingOutbound('test', { minEditIntervalMs: 50 });
    const stream = new ReplyStream(outbound, target, { log });
    const words = Array.from({ length: 200 }, (_, i) => `w${i} `);
    for (const w of words) {
      stream.append(w);
      await new Promise((r) => setTimeout(r, 1));
    }
    await stream.finish();
    expect(outbound.channelText('c1')).toEqual([words.join('')]);
    // 200 deltas over ~200+ ms at most one edit per 50 ms: far fewer calls than deltas.
    expect(outbound.calls).toBeLessThan(40);
  });

  it('edits the placeholder the inbound adapter posted instead of posting a new message', async () => {
    const outbound = new RecordingOutbound();
    const placeholder = await outbound.post(target, 'Thinking…');
    const stream = new ReplyStream(outbound, { ...target, messageId: placeholder.messageId }, { log });
    stream.append('answer');
    await stream.finish();
    expect(outbound.channelText('c1')).toEqual(['answer']);
  });

  it('continues in new messages at safe boundaries and never loses text', async () => {
    const outbound = new RecordingOutbound('test', { maxMessageLength: 500, minEditIntervalMs: 0 });
    const stream = new ReplyStream(outbound, target, { log });
    const code = Array.from({ length: 30 }, (_, i) => `line ${i} of the code block`).join('\n');
    const text = `Intro paragraph.\n\n\`\`\`sh\n${code}\n\`\`\`\n\nOutro.`;
    for (let i = 0; i < text.length; i += 7) stream.append(text.slice(i, i + 7));
    await stream.finish();
    const parts = outbound.channelText('c1');
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) {
      expect(p.length).toBeLessThanOrEqual(500);
      expect(openFenceAt(p)).toBeUndefined();
    }
    const joined = parts.join('\n');
    for (let i = 0; i < 30; i++) expect(joined).toContain(`line ${i} of the code block`);
    expect(parts.at(-1)).toMatch(/Outro\.$/);
  });

  it('retries failed edits with the latest text until it is visible', async () => {
    const outbound = new RecordingOutbound('test', { minEditIntervalMs: 0 });
    const stream = new ReplyStream(outbound, target, { log });
    stream.append('first');
    await stream.finish();
    const retrying = new ReplyStream(outbound, { ...target, messageId: [...outbound.messages.keys()][0] }, { log });
    outbound.failNext = 3;
    outbound.failWith = Object.assign(new Error('ratelimited'), { retryAfterMs: 10 });
    retrying.append('second, ');
    retrying.append('and final');
    await retrying.finish();
    expect(outbound.channelText('c1')).toEqual(['second, and final']);
  });

  it('shows a progress line while a tool runs and removes it at the end', async () => {
    const outbound = new RecordingOutbound('test', { minEditIntervalMs: 0 });
    const stream = new ReplyStream(outbound, target, { log });
    stream.append('Working on it.');
    stream.setStatus('Running `deploy`…');
    await new Promise((r) => setTimeout(r, 30));
    expect(outbound.channelText('c1')[0]).toBe('Working on it.\n\n_Running `deploy`…_');
    await stream.finish();
    expect(outbound.channelText('c1')).toEqual(['Working on it.']);
  });

  it('forgets a round that the provider restarts, so text is not shown twice', async () => {
    const outbound = new RecordingOutbound('test', { minEditIntervalMs: 0 });
    const stream = new ReplyStream(outbound, target, { log });
    stream.beginRound();
    stream.append('Hel');
    stream.restartRound();
    stream.append('Hello');
    await stream.finish();
    expect(outbound.channelText('c1')).toEqual(['Hello']);
  });

  it('finishing with the text already visible sends nothing more and does not wait out the edit interval', async () => {
    // An hour between edits: a finish that waited for the interval would never resolve within the test.
    const outbound = new RecordingOutbound('test', { minEditIntervalMs: 3_600_000 });
    const stream = new ReplyStream(outbound, target, { log });
    stream.append('the whole answer');
    await new Promise((r) => setTimeout(r, 5));
    expect(outbound.calls).toBe(1);
    await stream.finish('the whole answer');
    expect(outbound.calls).toBe(1);
    expect(outbound.channelText('c1')).toEqual(['the whole answer']);
  }, 5_000);

  it('finishing with changed text sends the newest text at once instead of waiting out the interval', async () => {
    // An hour between edits: a finish that waited for the interval would never resolve within the test.
    const outbound = new RecordingOutbound('test', { minEditIntervalMs: 3_600_000 });
    const stream = new ReplyStream(outbound, target, { log });
    stream.append('draft');
    await new Promise((r) => setTimeout(r, 5));
    stream.append(' and more'); // the pump now waits out the interval before showing this
    await new Promise((r) => setTimeout(r, 5));
    expect(outbound.channelText('c1')).toEqual(['draft']);
    await stream.finish('final');
    expect(outbound.calls).toBe(2);
    expect(outbound.channelText('c1')).toEqual(['final']);
  }, 5_000);

  it('a finish still honours the platform asking it to retry later', async () => {
    const outbound = new RecordingOutbound('test', { minEditIntervalMs: 3_600_000 });
    const stream = new ReplyStream(outbound, target, { log });
    stream.append('draft');
    await new Promise((r) => setTimeout(r, 5));
    outbound.failNext = 1;
    outbound.failWith = Object.assign(new Error('ratelimited'), { retryAfterMs: 150 });
    const before = Date.now();
    await stream.finish('final');
    expect(Date.now() - before).toBeGreaterThanOrEqual(140);
    expect(outbound.channelText('c1')).toEqual(['final']);
  }, 5_000);

  describe('live buttons after a delay', () => {
    const stop = [{ label: 'Stop', value: 'stop:1', style: 'danger' as const }];

    it('a quick answer is posted once, never with a Stop button to take away again', async () => {
      const outbound = new RecordingOutbound('test', { minEditIntervalMs: 50 });
      const stream = new ReplyStream(outbound, target, { log, liveButtons: stop, liveButtonsAfterMs: 1000 });
      stream.append('quick answer');
      await new Promise((r) => setTimeout(r, 5));
      await stream.finish();
      expect(outbound.channelText('c1')).toEqual(['quick answer']);
      expect(outbound.calls).toBe(1);
      expect([...outbound.messages.values()][0]!.buttons).toEqual([]);
    });

    it('a long turn gets the button once it is due, even with no new text, and loses it at the end', async () => {
      const outbound = new RecordingOutbound('test', { minEditIntervalMs: 5 });
      const stream = new ReplyStream(outbound, target, { log, liveButtons: stop, liveButtonsAfterMs: 60 });
      stream.append('working on it');
      await new Promise((r) => setTimeout(r, 20));
      const message = [...outbound.messages.values()][0]!;
      expect(message.buttons).toEqual([]);
      await vi.waitFor(() => expect(message.buttons).toEqual(stop), { timeout: 5_000, interval: 10 });
      await stream.finish('done');
      expect(message.text).toBe('done');
      expect(message.buttons).toEqual([]);
    });
  });
});

describe('a stream’s place in the platform’s budget', () => {
  /** An outbound with a budget: it records each wait's lane and holds a partial edit's wait until it turns final. */
  class LaneOutbound extends RecordingOutbound {
    readonly lanes: Array<'partial' | 'final'> = [];
    promoted = false;
    async reserve(_target: unknown, _signal?: AbortSignal, partial?: PartialEdit): Promise<void> {
      this.lanes.push(partial ? 'partial' : 'final');
      if (!partial) return;
      // A budget busy with other conversations' cards: the partial edit waits until its text is final.
      await new Promise<void>((resolve) => partial.finalized.addEventListener('abort', () => resolve()));
      this.promoted = true;
    }
  }

  it('waits for a partial text’s token behind cards and finals, and queues as a final once the text is final', async () => {
    const outbound = new LaneOutbound('test', { minEditIntervalMs: 0 });
    const placeholder = await outbound.post(target, '…');
    const stream = new ReplyStream(outbound, { ...target, messageId: placeholder.messageId }, { log });
    stream.append('half an ans');
    await expect.poll(() => outbound.lanes).toEqual(['partial']);
    await stream.finish('the whole answer');
    expect(outbound.promoted).toBe(true);
    // The one edit the token paid for showed the final text; nothing partial went out after it.
    expect(outbound.channelText('c1')).toEqual(['the whole answer']);
    expect(outbound.messages.get(placeholder.messageId)?.edits).toBe(1);
  });
});

describe('a reply that waits for another to show first', () => {
  it('posts nothing once handed off, even when what it waited for shows afterwards', async () => {
    // A platform with a budget (open): its replies may be handed off to the outbox.
    const outbound = new BudgetedOutbound();
    outbound.open();
    let shown: () => void = () => undefined;
    const waiting = new Promise<void>((resolve) => (shown = resolve));
    const stream = new ReplyStream(outbound, target, {
      log,
      showAfter: (signal) =>
        Promise.race([
          waiting,
          new Promise<void>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error))),
        ]),
    });
    stream.append('a partial answer the next attempt will stream again');
    await new Promise((r) => setTimeout(r, 50));
    await stream.handOff();
    shown();
    await new Promise((r) => setTimeout(r, 100));
    expect(outbound.calls).toBe(0);
  });
});
