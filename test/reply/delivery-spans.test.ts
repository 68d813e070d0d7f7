import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReplyStream } from '../../src/reply/reply-stream.ts';
import { createLogger } from '../../src/log.ts';
import { startTelemetry, type Telemetry } from '../../src/telemetry/sdk.ts';
import { withSpan } from '../../src/telemetry/spans.ts';
import { RecordingOutbound } from '../helpers/recording-outbound.ts';
import { startFakeOtlpReceiver, type FakeOtlpReceiver } from '../fakes/otlp/receiver.ts';

const log = createLogger('silent');
const target = { platform: 'test', channel: 'c1' };

/** Each post and edit of a reply is a span of the turn; a platform's 429 is an event on it. */
describe('reply deliveries while tracing', () => {
  let receiver: FakeOtlpReceiver;
  let telemetry: Telemetry | undefined;
  beforeAll(async () => {
    receiver = await startFakeOtlpReceiver();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    telemetry = await startTelemetry();
  });
  afterAll(async () => {
    await telemetry?.shutdown();
    await receiver.close();
  });

  it('records each delivery inside the turn and a 429 as a rate_limited event with the wait asked for', async () => {
    const outbound = new RecordingOutbound('test', { minEditIntervalMs: 0 });
    await withSpan('run CHAT', {}, async () => {
      const stream = new ReplyStream(outbound, target, { log });
      stream.append('first');
      await stream.finish();
      const retrying = new ReplyStream(outbound, { ...target, messageId: [...outbound.messages.keys()][0] }, { log });
      outbound.failNext = 2;
      outbound.failWith = Object.assign(new Error('ratelimited'), { retryAfterMs: 10 });
      retrying.append('second');
      await retrying.finish();
    });
    await telemetry?.shutdown();
    telemetry = undefined;
    const run = receiver.spans.find((s) => s.name === 'run CHAT')!;
    const deliveries = receiver.spans.filter((s) => s.name.startsWith('deliver '));
    expect(deliveries.map((s) => s.name)).toEqual(expect.arrayContaining(['deliver post', 'deliver edit']));
    for (const d of deliveries) expect(d.parentSpanId).toBe(run.spanId);
    const limited = deliveries.flatMap((d) => d.events.filter((e) => e.name === 'rate_limited'));
    expect(limited).toEqual([
      { name: 'rate_limited', attributes: { 'countersign.retry_after_ms': 10 } },
      { name: 'rate_limited', attributes: { 'countersign.retry_after_ms': 10 } },
    ]);
    expect(outbound.channelText('c1')).toEqual(['second']);
  });
});
