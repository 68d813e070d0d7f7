import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureGenAi } from '../../src/telemetry/gen-ai.ts';
import { withSpan } from '../../src/telemetry/spans.ts';

/** A failure's message often quotes what failed (a tool's arguments): off by default like all content. */
describe('a failed span', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(() => trace.setGlobalTracerProvider(provider));
  afterAll(async () => {
    configureGenAi({ captureContent: false, latestOnly: false });
    trace.disable();
    await provider.shutdown();
  });

  async function fail(message: string) {
    exporter.reset();
    await withSpan('execute_tool', {}, async () => {
      throw new TypeError(message);
    }).catch(() => undefined);
    const [span] = exporter.getFinishedSpans();
    return JSON.stringify({ status: span!.status, events: span!.events, attributes: span!.attributes });
  }

  it('records only the error’s kind without the content opt-in', async () => {
    configureGenAi({ captureContent: false, latestOnly: false });
    const recorded = await fail('cannot create issue "db password: hunter2"');
    expect(recorded).not.toContain('hunter2');
    expect(recorded).toContain('TypeError');
  });

  it('records the message with the opt-in', async () => {
    configureGenAi({ captureContent: true, latestOnly: false });
    expect(await fail('cannot create issue "db password: hunter2"')).toContain('hunter2');
  });
});
