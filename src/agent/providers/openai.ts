import OpenAI from 'openai';
import type { Logger } from 'pino';
import type { Message } from '../messages.ts';
import {
  ZERO_USAGE,
  type ModelProvider,
  type ModelRequest,
  type ModelRound,
  type RoundCallbacks,
  type StopReason,
} from '../model.ts';
import { withRetries, type RetryOptions } from './retry.ts';
import { toolCallFromJson } from './tool-args.ts';

type WireMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** Neutral messages → Chat Completions shape: one `tool` message per result, arguments as JSON text. */
export function toOpenAIMessages(system: string, messages: Message[]): WireMessage[] {
  const out: WireMessage[] = [{ role: 'system', content: system }];
  for (const m of messages) {
    if (m.role === 'user') out.push({ role: 'user', content: m.text });
    else if (m.role === 'assistant') {
      out.push({
        role: 'assistant',
        content: m.text || null,
        ...(m.toolCalls.length
          ? {
              tool_calls: m.toolCalls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: JSON.stringify(c.args) },
              })),
            }
          : {}),
      });
    } else {
      for (const r of m.results) out.push({ role: 'tool', tool_call_id: r.toolCallId, content: r.content });
    }
  }
  return out;
}

const STOP: Record<string, StopReason> = { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens' };

export interface OpenAIOptions {
  /** 'openai', or 'openrouter' (same API, other endpoint). */
  name: string;
  apiKey: string;
  model: string;
  baseURL?: string;
  maxRetries: number;
  log?: Logger;
  retry?: Pick<RetryOptions, 'sleep' | 'baseDelayMs'>;
}

/** OpenAI Chat Completions, and every server that speaks it (OpenRouter, Ollama, vLLM, LM Studio, llama.cpp). */
export class OpenAIProvider implements ModelProvider {
  readonly name: string;
  readonly model: string;
  readonly #client: OpenAI;
  readonly #options: OpenAIOptions;

  constructor(options: OpenAIOptions) {
    this.name = options.name;
    this.model = options.model;
    this.#options = options;
    this.#client = new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL ?? null, maxRetries: 0 });
  }

  streamRound(request: ModelRequest, callbacks: RoundCallbacks, signal: AbortSignal): Promise<ModelRound> {
    return withRetries(
      {
        provider: this.name,
        maxRetries: this.#options.maxRetries,
        signal,
        log: this.#options.log,
        ...this.#options.retry,
      },
      callbacks,
      (tracked) => this.#attempt(request, tracked, signal),
    );
  }

  async #attempt(request: ModelRequest, callbacks: RoundCallbacks, signal: AbortSignal): Promise<ModelRound> {
    const stream = await this.#client.chat.completions.create(
      {
        model: this.model,
        messages: toOpenAIMessages(request.system, request.messages),
        ...(request.tools.length
          ? {
              tools: request.tools.map((t) => ({
                type: 'function' as const,
                function: { name: t.name, description: t.description, parameters: t.inputSchema },
              })),
            }
          : {}),
        max_tokens: request.maxTokens,
        stream: true,
        stream_options: { include_usage: true },
      },
      { signal },
    );
    let text = '';
    const usage = { ...ZERO_USAGE };
    let stopReason: StopReason | undefined;
    const calls = new Map<number, { id: string; name: string; json: string }>();
    for await (const chunk of stream) {
      if (chunk.usage) {
        const cached = chunk.usage.prompt_tokens_details?.cached_tokens ?? 0;
        usage.inputTokens = chunk.usage.prompt_tokens - cached;
        usage.cacheReadTokens = cached;
        usage.outputTokens = chunk.usage.completion_tokens;
      }
      const choice = chunk.choices[0];
      if (!choice) continue;
      const delta = choice.delta;
      if (delta?.content) {
        text += delta.content;
        callbacks.onText(delta.content);
      }
      for (const part of delta?.tool_calls ?? []) {
        const call = calls.get(part.index) ?? { id: '', name: '', json: '' };
        if (part.id) call.id = part.id;
        if (part.function?.name) call.name += part.function.name;
        if (part.function?.arguments) call.json += part.function.arguments;
        calls.set(part.index, call);
      }
      if (choice.finish_reason) stopReason = STOP[choice.finish_reason] ?? 'other';
    }
    // No finish_reason: the stream was cut; its partial tool calls must not be used.
    if (!stopReason) throw new Error('the model stream ended without a finish_reason');
    const toolCalls = [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]) => toolCallFromJson(c.id || `call_${index}`, c.name, c.json));
    return { text, toolCalls, stopReason, usage, provider: this.name, model: this.model, fallbacks: [] };
  }
}
