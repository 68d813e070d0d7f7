import { ProviderUnavailableError } from '../model.ts';

/** How a failed model call should be handled. */
export type Failure =
  | { kind: 'retry'; reason: string; retryAfterMs?: number; overload: boolean }
  | { kind: 'unavailable'; reason: string }
  | { kind: 'fatal'; reason: string };

const QUOTA =
  /insufficient_quota|billing_hard_limit_reached|RESOURCE_EXHAUSTED|credit balance|out of credits|insufficient credits|quota exceeded|exceeded your current quota/i;

interface HttpishError {
  status?: number;
  headers?: Headers | Record<string, string>;
  message?: string;
  error?: unknown;
  code?: string;
  name?: string;
  cause?: unknown;
}

function header(headers: HttpishError['headers'], name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  return (headers as Record<string, string>)[name];
}

/** Reads `retry-after-ms` / `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(headers: HttpishError['headers'], now = Date.now()): number | undefined {
  const ms = header(headers, 'retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = header(headers, 'retry-after');
  if (!value) return undefined;
  if (Number.isFinite(Number(value))) return Math.max(0, Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

/** Classifies an SDK or network error the same way for every provider. */
export function classifyFailure(error: unknown): Failure {
  const e = (error ?? {}) as HttpishError;
  const text = `${e.message ?? ''} ${JSON.stringify(e.error ?? '')}`;
  if (error instanceof ProviderUnavailableError) return { kind: 'unavailable', reason: error.message };
  if (e.name === 'AbortError' || /aborted/i.test(e.name ?? '')) return { kind: 'fatal', reason: 'aborted' };
  const status = typeof e.status === 'number' ? e.status : undefined;
  if (QUOTA.test(text) || status === 402)
    return { kind: 'unavailable', reason: `quota or billing: ${oneLine(e.message)}` };
  if (status === 429)
    return { kind: 'retry', reason: 'rate limited (429)', retryAfterMs: retryAfterMs(e.headers), overload: true };
  if (status === 529 || status === 503 || /overloaded/i.test(text)) {
    return {
      kind: 'retry',
      reason: `overloaded (${status ?? 'stream'})`,
      retryAfterMs: retryAfterMs(e.headers),
      overload: true,
    };
  }
  if (status !== undefined && status >= 500) {
    return {
      kind: 'retry',
      reason: `server error (${status})`,
      retryAfterMs: retryAfterMs(e.headers),
      overload: false,
    };
  }
  if (status === 408 || status === 409) return { kind: 'retry', reason: `status ${status}`, overload: false };
  if (status !== undefined) return { kind: 'fatal', reason: `${status}: ${oneLine(e.message)}` };
  // No status: the connection failed or the stream was cut.
  return { kind: 'retry', reason: `connection: ${oneLine(e.message ?? String(error))}`, overload: false };
}

function oneLine(text: string | undefined): string {
  return (text ?? '').replace(/\s+/g, ' ').slice(0, 300);
}
