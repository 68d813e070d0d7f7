import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small OTLP/HTTP trace receiver on 127.0.0.1, as a collector's HTTP port (4318) answers
 * (https://opentelemetry.io/docs/specs/otlp/#otlphttp): `POST /v1/traces` with an
 * ExportTraceServiceRequest, `application/json` (decoded here) or `application/x-protobuf`
 * (counted, not decoded), answered 200 with an empty ExportTraceServiceResponse.
 */

/** One span as received, its attributes flattened to plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  links: Array<{ traceId: string; spanId: string }>;
  status: { code?: number; message?: string };
  /** The resource of the process that sent it (service.name, service.instance.id, process.pid, …). */
  resource: Record<string, unknown>;
}

export interface FakeOtlpReceiver {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  spans: ReceivedSpan[];
  /** Each export request's path and content type, in order. */
  requests: Array<{ path: string; contentType: string }>;
  close(): Promise<void>;
}

type OtlpValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
};
type OtlpAttribute = { key: string; value: OtlpValue };

function valueOf(v: OtlpValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));
}

/** OTLP/JSON ids are hex; an exporter sending base64 (protobuf's JSON mapping) is read too. */
function idOf(id: string | undefined): string | undefined {
  if (!id) return undefined;
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

const nanosToMs = (nanos: string | number) => Number(BigInt(nanos) / 1_000_000n);

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: OtlpAttribute[];
  events?: Array<{ name: string; attributes?: OtlpAttribute[] }>;
  links?: Array<{ traceId: string; spanId: string }>;
  status?: { code?: number; message?: string };
}

interface ExportTraceServiceRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
  }>;
}

function spansOf(body: ExportTraceServiceRequest): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs) => {
    const resource = attributesOf(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: idOf(s.traceId)!,
        spanId: idOf(s.spanId)!,
        parentSpanId: idOf(s.parentSpanId),
        name: s.name,
        kind: s.kind,
        startMs: nanosToMs(s.startTimeUnixNano),
        endMs: nanosToMs(s.endTimeUnixNano),
        attributes: attributesOf(s.attributes),
        events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
        links: (s.links ?? []).map((l) => ({ traceId: idOf(l.traceId)!, spanId: idOf(l.spanId)! })),
        status: s.status ?? {},
        resource,
      })),
    );
  });
}

export async function startFakeOtlpReceiver(): Promise<FakeOtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: FakeOtlpReceiver['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const contentType = req.headers['content-type'] ?? '';
      requests.push({ path: req.url ?? '', contentType });
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      if (contentType.startsWith('application/json')) {
        spans.push(...spansOf(JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportTraceServiceRequest));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      // An empty protobuf message is zero bytes.
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
