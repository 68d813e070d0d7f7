import type { Message, ToolCall } from './messages.ts';

/** What a tool looks like to a model: a name, what it does, and a JSON Schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface ModelRequest {
  system: string;
  messages: Message[];
  tools: ToolSpec[];
  maxTokens: number;
}

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export const ZERO_USAGE: TokenUsage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
};

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
  };
}

export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'other';

/** One completed model round: the text it streamed and the tool calls it asked for. */
export interface ModelRound {
  text: string;
  toolCalls: ToolCall[];
  stopReason: StopReason;
  usage: TokenUsage;
  /** The provider (and model) that actually answered, which differs from the configured one after a fallback. */
  provider: string;
  model: string;
  /** Providers that failed before this one answered, in order, with the reason. */
  fallbacks: Array<{ provider: string; reason: string }>;
}

export interface RoundCallbacks {
  /** A piece of visible text, delivered as soon as the provider streams it. */
  onText(delta: string): void;
  /**
   * The provider is retrying the round from scratch (e.g. the stream was cut): text delivered since
   * the round began will be streamed again, so the sink must forget it instead of showing it twice.
   */
  onRoundRestart(): void;
  /**
   * The usage the API has reported so far for the current attempt (cumulative), and the model
   * billing it, each time it reports more: a round that is stopped or fails after this was still
   * billed for it, and spend limits count it (src/agent/model-spend.ts).
   */
  onUsage?(usage: TokenUsage, model: string): void;
  /**
   * The current attempt failed and is over (a retry or a fallback provider may follow): what it was
   * billed stays billed, so spend limits keep it apart from the next attempt's usage. Called before
   * `onRoundRestart` withdraws its text.
   */
  onAttemptFailed?(): void;
  /**
   * Output the API streamed that is not visible text — a tool call's arguments, as they come — in
   * UTF-8 bytes: billed as output all the same, so a call stopped mid tool call counts it.
   */
  onOutputBytes?(bytes: number): void;
}

/**
 * A chat model that streams one round at a time. Implementations retry transient failures
 * themselves; an error thrown from `streamRound` means the round could not be completed.
 */
export interface ModelProvider {
  readonly name: string;
  readonly model: string;
  /** Every model that may answer a round, in the order tried (a fallback chain's); absent: `model` alone. */
  readonly models?: readonly string[];
  streamRound(request: ModelRequest, callbacks: RoundCallbacks, signal: AbortSignal): Promise<ModelRound>;
}

/** An error whose cause is the provider's account (quota, billing, credits): retrying the same provider won't help. */
export class ProviderUnavailableError extends Error {
  readonly provider: string;
  constructor(provider: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProviderUnavailableError';
    this.provider = provider;
  }
}
