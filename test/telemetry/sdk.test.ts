import { afterEach, describe, expect, it } from 'vitest';
import { startTelemetry, type Telemetry } from '../../src/telemetry/sdk.ts';
import { logTraceContext, traceCarrier, withSpan } from '../../src/telemetry/spans.ts';
import { startFakeOtlpReceiver } from '../fakes/otlp/receiver.ts';

/** Traces are off unless an OTLP endpoint is set: no SDK, no exporter, nothing carried in a work item. */
describe('starting telemetry', () => {
  const original = { ...process.env };
  let started: Telemetry | undefined;
  /** Starts telemetry as a process with exactly these OTEL_* variables would. */
  const startWith = (env: Record<string, string>) => {
    for (const name of Object.keys(process.env)) if (name.startsWith('OTEL_')) delete process.env[name];
    Object.assign(process.env, env);
    return startTelemetry();
  };
  afterEach(async () => {
    await started?.shutdown();
    started = undefined;
    process.env = { ...original };
  });

  it('starts nothing without an endpoint: spans do not record and no trace context is carried', async () => {
    started = await startWith({ OTEL_SERVICE_NAME: 'countersign', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' });
    expect(started).toBeUndefined();
    await withSpan('ingress', {}, async (span) => {
      expect(span.isRecording()).toBe(false);
      expect(traceCarrier()).toEqual({});
      expect(logTraceContext()).toEqual({});
    });
  });

  it('starts nothing when the SDK or the traces exporter is switched off', async () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(await startWith({ ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(await startWith({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });

  it('refuses a protocol it cannot send, saying what to set', async () => {
    await expect(
      startWith({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    ).rejects.toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported.*http\/protobuf/);
  });

  // Last: it registers the SDK for the rest of this file's process.
  it('sends spans over OTLP/HTTP with protobuf when asked', async () => {
    const receiver = await startFakeOtlpReceiver();
    try {
      started = await startWith({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      });
      expect(started?.protocol).toBe('http/protobuf');
      await withSpan('ingress', {}, async (span) => {
        expect(span.isRecording()).toBe(true);
        expect(traceCarrier().traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
        expect(logTraceContext()).toEqual({ trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId });
      });
      await started?.shutdown();
      started = undefined;
      expect(receiver.requests).toEqual([{ path: '/v1/traces', contentType: 'application/x-protobuf' }]);
    } finally {
      await receiver.close();
    }
  });
});
