import { z } from 'zod';
import { configureGenAi } from './gen-ai.ts';

/**
 * Starts the OpenTelemetry SDK when an OTLP endpoint is configured, from the standard variables
 * only (docs/observability.md). Without one nothing is loaded: no SDK, no exporter, and the API the
 * code calls (src/telemetry/spans.ts) stays a no-op.
 */

/** The standard variables this module reads itself; the SDK and exporter read the rest (headers, sampler, batching). */
const TelemetryEnv = z.object({
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.string().optional(),
  OTEL_SDK_DISABLED: z.string().optional(),
  OTEL_TRACES_EXPORTER: z.string().optional(),
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: z.string().optional(),
  OTEL_SEMCONV_STABILITY_OPT_IN: z.string().optional(),
});
type TelemetryEnv = z.infer<typeof TelemetryEnv>;

export interface Telemetry {
  /** The OTLP protocol spans are sent with. */
  protocol: 'http/json' | 'http/protobuf';
  /** Sends the spans still buffered and stops; call once, as the process stops. */
  shutdown(): Promise<void>;
}

const present = (value: string | undefined): value is string => value !== undefined && value.trim() !== '';

/** Whether the variables ask for traces: an endpoint is set and nothing switches them off. */
function wantsTraces(env: TelemetryEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return false;
  return present(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) || present(env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

function protocolOf(env: TelemetryEnv): Telemetry['protocol'] {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? '').trim();
  if (protocol === 'http/protobuf') return 'http/protobuf';
  if (protocol === '' || protocol === 'http/json') return 'http/json';
  throw new Error(
    `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: Countersign sends traces over OTLP/HTTP; set http/protobuf or http/json (or point it at a collector's HTTP port, 4318).`,
  );
}

/**
 * Starts tracing for this process from its environment (the SDK and the exporter read
 * `process.env` themselves), or returns undefined (and loads nothing) when no endpoint is set. The
 * SDK packages are imported only here, only then: a process without an endpoint never loads them.
 */
export async function startTelemetry(): Promise<Telemetry | undefined> {
  const env = TelemetryEnv.parse(process.env);
  if (!wantsTraces(env)) return undefined;
  const protocol = protocolOf(env);
  configureGenAi({
    captureContent: env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.trim().toLowerCase() === 'true',
    latestOnly: (env.OTEL_SEMCONV_STABILITY_OPT_IN ?? '')
      .split(',')
      .some((v) => v.trim() === 'gen_ai_latest_experimental'),
  });
  const [{ NodeTracerProvider, BatchSpanProcessor }, resources, semconv] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  const exporter =
    protocol === 'http/protobuf'
      ? new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter()
      : new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) win over the defaults below; each
  // process gets its own service.instance.id, so an ingress and two workers tell apart in one trace.
  const detected = resources.detectResources({
    detectors: [resources.serviceInstanceIdDetector, resources.processDetector, resources.hostDetector],
  });
  const resource = resources
    .resourceFromAttributes({ [semconv.ATTR_SERVICE_NAME]: 'countersign' })
    .merge(detected)
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  // The provider reads OTEL_TRACES_SAMPLER(_ARG) and the batch processor OTEL_BSP_*; the exporter
  // reads the endpoint, headers, timeout and compression.
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  provider.register();
  return { protocol, shutdown: () => provider.shutdown() };
}
