import { pino, type Logger } from 'pino';
import { SECRET_VARIABLES } from './config.ts';
import { logTraceContext } from './telemetry/spans.ts';
import { readableDestination } from './log-line.ts';

export type { Logger };

/**
 * Paths pino blanks before a line is written. Secrets should never reach a log call at all; this
 * is the second line of defence for objects that carry them (configs, SDK clients, headers).
 */
const REDACT = [
  '*.token',
  '*.botToken',
  '*.appToken',
  '*.apiKey',
  '*.password',
  '*.signingSecret',
  '*.authorization',
  '*.Authorization',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.headers.authorization',
  '*.headers["x-api-key"]',
  '*.DATABASE_URL',
  '*.connectionString',
  // Every secret variable, at the top of a logged object and one level down (a logged config).
  ...[...SECRET_VARIABLES].flatMap((name) => [name, `*.${name}`]),
];

/** Known secret shapes, scrubbed from log messages and error texts. */
const SECRET_PATTERNS = [
  /xox[abposr]-[A-Za-z0-9-]+/g,
  /xapp-[A-Za-z0-9-]+/g,
  /sk-[A-Za-z0-9_-]{8,}/g,
  /(postgres(?:ql)?:\/\/[^:/@\s]+:)[^@\s]+@/g,
];

export function scrubSecrets(text: string): string {
  let out = text;
  for (const pattern of SECRET_PATTERNS) {
    out = out.replace(pattern, (match, prefix: unknown) => (typeof prefix === 'string' ? `${prefix}****@` : '****'));
  }
  return out;
}

/**
 * Where logs go by default: stderr, as one readable line each when it is a terminal (a person reads
 * it), as JSON lines otherwise (a file, a pipe, a log collector reads it).
 */
export function defaultLogDestination(stderrIsTerminal = Boolean(process.stderr.isTTY)): pino.DestinationStream {
  return stderrIsTerminal ? readableDestination(process.stderr) : pino.destination(2);
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'countersign' },
      // trace_id/span_id of the active span, so a line leads to its trace (nothing when not tracing).
      mixin: logTraceContext,
      redact: { paths: REDACT, censor: '****' },
      hooks: {
        logMethod(args, method) {
          const scrubbed = args.map((a) => (typeof a === 'string' ? scrubSecrets(a) : a));
          method.apply(this, scrubbed as Parameters<typeof method>);
        },
      },
      serializers: {
        err: (err: unknown) => {
          const s = pino.stdSerializers.err(err as Error);
          if (s && typeof s.message === 'string') s.message = scrubSecrets(s.message);
          if (s && typeof s.stack === 'string') s.stack = scrubSecrets(s.stack);
          return s;
        },
      },
    },
    destination ?? defaultLogDestination(),
  );
}
