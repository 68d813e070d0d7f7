/**
 * The reply stream over Slack's native delivery (NativeDelivery), against a peer that, like Slack, refuses
 * appends to a stopped stream and never lets text be taken back, so every fallback path is forced.
 */
import { describe, expect, it } from 'vitest';
import { ReplyStream } from '../../../src/reply/reply-stream.ts';
import type { PostedMessage } from '../../../src/reply/outbound.ts';
import type { DeliveryContext } from '../../../src/reply/delivery.ts';
import {
  NativeDelivery,
  StreamingUnavailable,
  type NativeStreaming,
} from '../../../src/adapters/slack/native-delivery.ts';
import { type ReplyTarget } from '../../../src/core/reply-target.ts';
import { createLogger } from '../../../src/log.ts';
import { openFenceAt } from '../../../src/reply/split.ts';
import { RecordingOutbound } from '../../helpers/recording-outbound.ts';

const log = createLogger('silent');
const target: ReplyTarget = { platform: 'test', channel: 'C1', thread: '1.0', recipient: 'U1', workspace: 'T1' };
const tick = (ms = 2) => new Promise((r) => setTimeout(r, ms));

class AppendOnlyPeer implements NativeStreaming {
  maxAgeMs = 60_000;
  maxLength = 10_000;
  readonly outbound: RecordingOutbound;
  readonly open = new Set<string>();
  readonly log: string[] = [];
  refuseStart = false;
  refuseAppends = false;
  constructor(outbound: RecordingOutbound) {
    this.outbound = outbound;
  }
  async start(t: ReplyTarget, text: string): Promise<PostedMessage | undefined> {
    this.log.push('start');
    if (this.refuseStart) return undefined;
    const posted = await this.outbound.post(t, text);
    this.open.add(posted.messageId);
    return posted;
  }
  async reserveAppend(): Promise<void> {}
  async append(_t: ReplyTarget, id: string, text: string): Promise<void> {
    this.log.push('append');
    if (this.refuseAppends) throw new StreamingUnavailable('message_not_in_streaming_state');
    if (!this.open.has(id)) throw new StreamingUnavailable('message_not_in_streaming_state');
    const m = this.outbound.messages.get(id)!;
    m.text += text;
  }
  /** Runs while a stop call is in flight (the model goes on writing meanwhile). */
  duringStop: (() => void) | undefined;
  async stop(_t: ReplyTarget, id: string, text?: string): Promise<void> {
    this.log.push('stop');
    this.duringStop?.();
    await tick(1);
    if (!this.open.delete(id)) throw new StreamingUnavailable('message_not_in_streaming_state');
    if (text) this.outbound.messages.get(id)!.text += text;
  }
  async remove(_t: ReplyTarget, id: string): Promise<void> {
    this.log.push('remove');
    this.outbound.messages.delete(id);
  }
}

function setup(options: { placeholder?: boolean } = {}) {
  const outbound = new RecordingOutbound('test', { minEditIntervalMs: 5, maxMessageLength: 4000 });
  const peer = new AppendOnlyPeer(outbound);
  Object.assign(outbound, {
    createDelivery: (context: DeliveryContext) => new NativeDelivery(peer, outbound, context),
  });
  return { outbound, peer, placeholder: options.placeholder ?? true };
}

async function start(o: ReturnType<typeof setup>, extra: Partial<ConstructorParameters<typeof ReplyStream>[2]> = {}) {
  const placeholder = o.placeholder ? await o.outbound.post(target, '…') : undefined;
  const t = { ...target, ...(placeholder ? { messageId: placeholder.messageId } : {}) };
  return {
    stream: new ReplyStream(o.outbound, t, {
      log,
      liveButtons: [{ label: 'Stop', value: 'stop:x', style: 'danger' }],
      ...extra,
    }),
    placeholder,
  };
}

describe('native streaming', () => {
  it('streams by appending whole words, shows status and Stop on the placeholder, then deletes it', async () => {
    const o = setup();
    const { stream, placeholder } = await start(o);
    stream.setStatus('Running `deploy`…');
    const text = 'The deploy finished. Every check passed and the new version serves traffic.';
    for (let i = 0; i < text.length; i += 3) {
      stream.append(text.slice(i, i + 3));
      await tick();
      // Nothing half-sent: an open stream always ends at a word boundary.
      for (const id of o.peer.open) expect(o.outbound.messages.get(id)!.text).toMatch(/(^|\s)$/);
    }
    const duringStatus = o.outbound.messages.get(placeholder!.messageId)!;
    expect(duringStatus.text).toBe('_Running `deploy`…_');
    expect(duringStatus.buttons?.[0]?.value).toBe('stop:x');
    await stream.finish();
    expect(o.outbound.channelText('C1')).toEqual([text]);
    expect(o.outbound.messages.has(placeholder!.messageId)).toBe(false);
    expect(o.peer.log.filter((c) => c === 'start')).toHaveLength(1);
    expect(o.peer.log.filter((c) => c === 'append').length).toBeGreaterThan(1);
    expect(o.peer.open.size).toBe(0);
  });

  it('falls back to editing when a round is restarted and its text taken back', async () => {
    const o = setup();
    const { stream } = await start(o);
    stream.beginRound();
    stream.append('A first try that will be withdrawn ');
    await tick(20);
    stream.restartRound();
    stream.append('The real answer.');
    await stream.finish();
    expect(o.outbound.channelText('C1')).toEqual(['The real answer.']);
    expect(o.peer.open.size).toBe(0);
  });

  it('falls back mid-stream when the platform refuses appends, losing nothing', async () => {
    const o = setup();
    const { stream } = await start(o);
    stream.append('Part one is here ');
    await tick(20);
    o.peer.refuseAppends = true;
    stream.append('and part two follows.');
    await stream.finish();
    expect(o.outbound.channelText('C1')).toEqual(['Part one is here and part two follows.']);
  });

  it('uses the placeholder itself when no stream can start', async () => {
    const o = setup();
    o.peer.refuseStart = true;
    const { stream, placeholder } = await start(o);
    stream.append('edited into the placeholder');
    await stream.finish();
    expect(o.outbound.channelText('C1')).toEqual(['edited into the placeholder']);
    expect(o.outbound.messages.get(placeholder!.messageId)!.text).toBe('edited into the placeholder');
  });

  it('rolls over to a new stream when one gets old, closing and reopening an open code block', async () => {
    const o = setup({ placeholder: false });
    o.peer.maxAgeMs = 30;
    const { stream } = await start(o);
    const lines = Array.from({ length: 40 }, (_, i) => `echo step ${i}`);
    const text = `Running:\n\`\`\`sh\n${lines.join('\n')}\n\`\`\`\nDone.`;
    for (let i = 0; i < text.length; i += 9) {
      stream.append(text.slice(i, i + 9));
      await tick(3);
    }
    await stream.finish();
    const messages = o.outbound.channelText('C1');
    expect(messages.length).toBeGreaterThan(1);
    for (const m of messages) expect(openFenceAt(m)).toBeUndefined();
    // Every line arrives exactly once, in order, across the messages.
    const joined = messages.join('\n');
    let at = 0;
    for (const line of [...lines, 'Done.']) {
      const next = joined.indexOf(line, at);
      expect(next, line).toBeGreaterThanOrEqual(at);
      at = next + line.length;
    }
    // No code line is ever cut in two by a rollover.
    for (const line of lines) expect(joined.split(`${line}\n`).length, line).toBe(2);
  });

  it('loses nothing the model writes while a rollover is stopping the old stream', async () => {
    const o = setup({ placeholder: false });
    o.peer.maxAgeMs = 20;
    const { stream } = await start(o);
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i} of the answer`);
    let next = 0;
    o.peer.duringStop = () => {
      if (next < lines.length) stream.append(`${lines[next++]}\n`);
    };
    while (next < lines.length) {
      stream.append(`${lines[next++]}\n`);
      await tick(4);
    }
    await stream.finish();
    const joined = o.outbound.channelText('C1').join('\n');
    for (const line of lines) expect(joined.split(`${line}\n`).length, line).toBe(2);
    expect(o.outbound.channelText('C1').length).toBeGreaterThan(1);
  });

  it('splits a reply longer than a streamed message holds', async () => {
    const o = setup({ placeholder: false });
    o.peer.maxLength = 200;
    const { stream } = await start(o);
    const text = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    stream.append(text);
    await stream.finish();
    const messages = o.outbound.channelText('C1');
    expect(messages.length).toBeGreaterThan(1);
    for (const m of messages) expect(m.length).toBeLessThanOrEqual(200);
    expect(messages.join(' ').replace(/\s+/g, ' ').trim()).toBe(text);
  });

  it('a resumed turn stops the stream a dead worker left open and corrects it by editing', async () => {
    const o = setup({ placeholder: false });
    const { stream } = await start(o);
    stream.append('Checkpointed text. ');
    await tick(20);
    const snapshot = stream.snapshot();
    expect(snapshot.streamingMessageId).toBeDefined();
    // The dead worker got further than its checkpoint before dying.
    stream.append('Text past the checkpoint ');
    await tick(20);
    const resumed = new ReplyStream(o.outbound, target, { log, initial: snapshot });
    resumed.restoreText('Checkpointed text. ');
    resumed.append('Resumed ending.');
    await resumed.finish();
    expect(o.outbound.channelText('C1')).toEqual(['Checkpointed text. Resumed ending.']);
    expect(o.peer.open.size).toBe(0);
  });

  it('never streams natively outside a thread', async () => {
    const o = setup({ placeholder: false });
    const stream = new ReplyStream(o.outbound, { platform: 'test', channel: 'C1' }, { log });
    stream.append('top-level answer');
    await stream.finish();
    expect(o.peer.log).toEqual([]);
    expect(o.outbound.channelText('C1')).toEqual(['top-level answer']);
  });
});
