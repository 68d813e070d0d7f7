import {
  context,
  createContextKey,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type TimeInput,
} from '@opentelemetry/api';
import { capturesContent } from './gen-ai.ts';

/**
 * The spans of a turn, through the OpenTelemetry API only. Without an SDK (no
 * OTEL_EXPORTER_OTLP_ENDPOINT, src/telemetry/sdk.ts) the API is a no-op: spans do not record,
 * `traceCarrier` injects nothing, and a work item's payload stays as it was.
 */

/** The instrumentation scope every span of Countersign is made under. */
const tracer = trace.getTracer('countersign');

export { SpanKind };
export type { Span };

/**
 * The W3C trace context of a turn, as it travels in a work item's payload or a parked turn's
 * state: the continuation of an approval clicked hours later, on another worker, joins the trace.
 */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** Where a span's parent comes from: the active context (the default) or a stored carrier. */
interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** A stored trace context (a work item's payload): the span continues that trace. */
  parent?: unknown;
  links?: Link[];
  startTime?: TimeInput;
}

/** The conversation a span belongs to, for spans made where only the context knows it (a model call). */
const CONVERSATION = createContextKey('countersign.conversation');

/** The conversation of the active turn, set by `withSpan`'s `conversationId`. */
export function activeConversationId(): string | undefined {
  const value = context.active().getValue(CONVERSATION);
  return typeof value === 'string' ? value : undefined;
}

function parentContext(parent: unknown): Context {
  const carrier = carrierOf(parent);
  return carrier.traceparent ? propagation.extract(ROOT_CONTEXT, carrier) : context.active();
}

/**
 * Runs `fn` inside a new span, active for everything `fn` awaits; the span ends when `fn` settles,
 * with an error status and the exception recorded when it throws (rethrown unchanged).
 */
export async function withSpan<T>(
  name: string,
  options: SpanOptions & { conversationId?: string },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const { parent, conversationId, ...spanOptions } = options;
  let ctx = parent === undefined ? context.active() : parentContext(parent);
  if (conversationId !== undefined) ctx = ctx.setValue(CONVERSATION, conversationId);
  return tracer.startActiveSpan(name, spanOptions, ctx, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      failSpan(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * A span that is not made active: the approval wait, which starts when its card was stored (in
 * the past) and ends at the decision. The caller ends it; a span never ended is never exported.
 */
export function startSpan(name: string, options: SpanOptions): Span {
  const { parent, ...spanOptions } = options;
  return tracer.startSpan(name, spanOptions, parent === undefined ? context.active() : parentContext(parent));
}

/**
 * Records a failure on a span. An error's message often repeats what it failed on (an MCP server's
 * error quotes the tool's arguments, a provider's the prompt), so without the content opt-in only
 * its kind is recorded: `error.type`, and an exception event without message or stack.
 */
function failSpan(span: Span, error: unknown): void {
  const kind = error instanceof Error ? ((error as NodeJS.ErrnoException).code ?? error.name) : typeof error;
  if (!capturesContent()) {
    span.setAttribute('error.type', kind);
    span.recordException({ name: kind });
    span.setStatus({ code: SpanStatusCode.ERROR, message: kind });
    return;
  }
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** The active trace context (or `span`'s) as a carrier to store; empty when nothing is traced. */
export function traceCarrier(span?: Span): TraceCarrier {
  const carrier: Record<string, string> = {};
  propagation.inject(span ? trace.setSpan(context.active(), span) : context.active(), carrier);
  return {
    ...(carrier.traceparent ? { traceparent: carrier.traceparent } : {}),
    ...(carrier.tracestate ? { tracestate: carrier.tracestate } : {}),
  };
}

/** The trace context stored in `value` (a work item's payload, a parked turn's state), if any. */
export function carrierOf(value: unknown): TraceCarrier {
  if (typeof value !== 'object' || value === null) return {};
  const { traceparent, tracestate } = value as Record<string, unknown>;
  return {
    ...(typeof traceparent === 'string' ? { traceparent } : {}),
    ...(typeof tracestate === 'string' ? { tracestate } : {}),
  };
}

/**
 * A platform's 429 as an event on the delivery's span: outbounds throw it as an error carrying
 * `retryAfterMs` (the wait the platform asked for), which the reply stream honours before retrying.
 */
export function noteRateLimit(span: Span, error: unknown): void {
  const retryAfterMs = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  if (typeof retryAfterMs === 'number') span.addEvent('rate_limited', { 'countersign.retry_after_ms': retryAfterMs });
}

/** The active span's ids for a log line, so a line leads to its trace; empty outside a recording span. */
export function logTraceContext(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
