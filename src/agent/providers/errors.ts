import { whyUnreachable } from '../../net/unreachable.ts';
import { ProviderUnavailableError } from '../model.ts';

/** How a failed model call should be handled. */
export type Failure =
  | {
      kind: 'retry';
      reason: string;
      /** What the server asked us to wait (retry-after / retry-after-ms), when it said. */
      retryAfterMs?: number;
      /** The connection could not be opened, and why in a few words ("name not found"). */
      unreachable?: string;
    }
  | { kind: 'unavailable'; reason: string }
  /** The configured model id is not one the API serves (a typo, or a retired model). */
  | { kind: 'model_not_found'; reason: string }
  | { kind: 'fatal'; reason: string };

/**
 * A model id the API does not serve. Another provider (AI_PROVIDER_FALLBACK) may still answer, so it
 * is a ProviderUnavailableError; retrying the same one never helps. The message names the variable
 * to fix, since that is what a person reading the turn's error can change.
 */
export class ModelNotServedError extends ProviderUnavailableError {
  constructor(provider: string, setting: string, model: string, detail: string, options?: { cause?: unknown }) {
    super(
      provider,
      `${setting}=${model} is not a model this API serves (not found or retired): set ${setting} to a current model id. (${provider} said: ${detail})`,
      options,
    );
    this.name = 'ModelNotServedError';
  }
}

/**
 * "Model not found" in the words of each API: OpenAI's `model_not_found` code (404), OpenRouter's
 * 400 "… is not a valid model ID". Anthropic answers 404 `not_found_error` with "model: <id>",
 * vLLM 404 "The model `x` does not exist", Ollama 404 "model \"x\" not found": a 404 that names the
 * model. A 404 that does not (a wrong base URL) is not a model problem and stays fatal.
 */
const MODEL_NOT_FOUND = /model_not_found|is not a valid model id/i;

/**
 * Account-level exhaustion, in the words the APIs use: OpenAI (insufficient_quota,
 * billing_hard_limit_reached), Gemini-style gateways (RESOURCE_EXHAUSTED), Anthropic (billing_error,
 * "credit balance is too low", enforced_spend_limit_reached, "reached your specified API usage
 * limits"), OpenRouter (402 "insufficient credits"). Waiting does not fix any of them.
 */
const QUOTA =
  /insufficient_quota|billing_hard_limit_reached|billing_error|RESOURCE_EXHAUSTED|spend_limit|credit balance|out of credits|insufficient credits|more credits|quota exceeded|exceeded your current quota|specified API usage limits/i;

/**
 * Error types sent inside a stream (no HTTP status: the response had already started with 200),
 * mapped to the status the same failure has before the stream starts.
 */
const STATUS_OF_TYPE: Record<string, number> = {
  overloaded_error: 529,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  api_error: 500,
  server_error: 500,
  timeout_error: 504,
  billing_error: 402,
  insufficient_quota: 402,
};

interface HttpishError {
  status?: number;
  headers?: Headers | Record<string, string>;
  message?: string;
  error?: unknown;
  code?: unknown;
  type?: unknown;
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

/** The HTTP status, or for an error event inside a stream, the status its type stands for. */
function statusOf(e: HttpishError): number | undefined {
  if (typeof e.status === 'number') return e.status;
  const body = (e.error ?? {}) as { code?: unknown; type?: unknown; error?: { type?: unknown; code?: unknown } };
  // OpenRouter puts the HTTP-like status in error.code of a mid-stream error.
  for (const code of [body.code, body.error?.code, e.code]) {
    if (typeof code === 'number' && code >= 400) return code;
  }
  for (const type of [body.error?.type, body.type, e.type, body.code, e.code]) {
    if (typeof type === 'string' && STATUS_OF_TYPE[type]) return STATUS_OF_TYPE[type];
  }
  return undefined;
}

function isAbort(e: HttpishError): boolean {
  return /abort/i.test(e.name ?? '');
}

/** Classifies an SDK or network error the same way for every provider. */
export function classifyFailure(error: unknown): Failure {
  if (error instanceof ProviderUnavailableError) return { kind: 'unavailable', reason: error.message };
  const e = (error ?? {}) as HttpishError;
  if (isAbort(e)) return { kind: 'fatal', reason: 'aborted' };
  const text = `${e.message ?? ''} ${JSON.stringify(e.error ?? '')} ${String(e.code ?? '')} ${String(e.type ?? '')}`;
  const status = statusOf(e);
  if (MODEL_NOT_FOUND.test(text) || (status === 404 && /\bmodel\b/i.test(text)))
    return { kind: 'model_not_found', reason: oneLine(e.message) };
  if (QUOTA.test(text) || status === 402)
    return { kind: 'unavailable', reason: `quota or billing: ${oneLine(e.message)}` };
  const wait = retryAfterMs(e.headers);
  const withWait = wait === undefined ? {} : { retryAfterMs: wait };
  if (status === 429) return { kind: 'retry', reason: 'rate limited (429)', ...withWait };
  if (status === 529 || status === 503 || /overloaded/i.test(text))
    return { kind: 'retry', reason: `overloaded (${status ?? 'stream'})`, ...withWait };
  if (status !== undefined && status >= 500) return { kind: 'retry', reason: `server error (${status})`, ...withWait };
  if (status === 408 || status === 409) return { kind: 'retry', reason: `status ${status}`, ...withWait };
  if (status !== undefined) return { kind: 'fatal', reason: `${status}: ${oneLine(e.message)}` };
  // No status: the connection failed (ECONNRESET, refused, timed out) or the stream was cut.
  const unreachable = whyUnreachable(error);
  if (unreachable) return { kind: 'retry', reason: `connection: ${unreachable}`, unreachable };
  return { kind: 'retry', reason: `connection: ${oneLine(e.message ?? String(error))}` };
}

function oneLine(text: string | undefined): string {
  return (text ?? '').replace(/\s+/g, ' ').slice(0, 300);
}
