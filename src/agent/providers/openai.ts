import { createHash } from 'node:crypto';
import OpenAI from 'openai';
import type { Logger } from 'pino';
import type { Attachment, Message } from '../messages.ts';
import {
  ZERO_USAGE,
  type ModelProvider,
  type ModelRequest,
  type ModelRound,
  type RoundCallbacks,
  type StopReason,
} from '../model.ts';
import { streamWithRetries, type RetryTuning, type StreamWatch } from './retry.ts';
import { distinctToolCallIds, toolCallFromJson } from './tool-args.ts';

type WireMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** OpenAI rejects tool call ids longer than 40 characters; ids minted by another provider can be. */
function wireToolId(id: string): string {
  if (id.length <= 40) return id;
  return `call_${createHash('sha256').update(id).digest('hex').slice(0, 32)}`;
}

/**
 * The Chat Completions API has no error flag on a tool result, so a failure is said in the content
 * for the model to see.
 */
export const TOOL_ERROR_PREFIX = 'Error: ';

function toolResultContent(content: string, isError: boolean): string {
  return isError ? `${TOOL_ERROR_PREFIX}${content}` : content;
}

type UserContent = OpenAI.Chat.Completions.ChatCompletionUserMessageParam['content'];
type ContentPart = Exclude<UserContent, string>[number];

/** What the provider's model takes besides text. */
interface WireAbilities {
  /** Image parts (OPENAI_VISION / OPENROUTER_VISION); without them an image is named in the text. */
  vision: boolean;
}

/**
 * One attachment as parts of a person's message: an image as an image part (a data URL) where the
 * model sees images, else a line saying it was not shown. Chat Completions takes no PDF the way every
 * compatible server would, so a document travels as the text extracted from it at intake (bounded,
 * src/files/pdf-text.ts), or is named when it has none (a scan); the file is saved in the workspace.
 */
function attachmentPart(a: Attachment, abilities: WireAbilities): ContentPart {
  if (a.kind === 'image' && abilities.vision)
    return { type: 'image_url', image_url: { url: `data:${a.mediaType};base64,${a.data}` } };
  if (a.kind === 'image')
    return {
      type: 'text',
      text: `(The image "${a.name}" is not shown: this model takes no images. It is saved in the workspace, where the note says.)`,
    };
  if (a.text) return { type: 'text', text: `(The document "${a.name}" as text, extracted from it:)\n${a.text}` };
  return {
    type: 'text',
    text: `(The document "${a.name}" cannot be shown to this model and has no text to extract; see where it was saved.)`,
  };
}

/**
 * A person's message with its attachments. Text only (no image part among them) travels as one
 * string: a text-only server may take nothing else.
 */
function userContent(
  text: string,
  attachments: readonly Attachment[] | undefined,
  abilities: WireAbilities,
): UserContent {
  if (!attachments?.length) return text;
  const parts: ContentPart[] = [{ type: 'text', text }, ...attachments.map((a) => attachmentPart(a, abilities))];
  if (parts.every((p) => p.type === 'text')) return parts.map((p) => p.text).join('\n\n');
  return parts;
}

/** Neutral messages → Chat Completions shape: one `tool` message per result, arguments as JSON text. */
export function toOpenAIMessages(
  system: string,
  messages: Message[],
  abilities: WireAbilities = { vision: true },
): WireMessage[] {
  const out: WireMessage[] = system ? [{ role: 'system', content: system }] : [];
  for (const m of messages) {
    if (m.role === 'user') out.push({ role: 'user', content: userContent(m.text, m.attachments, abilities) });
    else if (m.role === 'assistant') {
      out.push({
        role: 'assistant',
        content: m.text || null,
        ...(m.toolCalls.length
          ? {
              tool_calls: m.toolCalls.map((c) => ({
                id: wireToolId(c.id),
                type: 'function' as const,
                function: { name: c.name, arguments: JSON.stringify(c.args) },
              })),
            }
          : {}),
      });
    } else {
      for (const r of m.results) {
        out.push({
          role: 'tool',
          tool_call_id: wireToolId(r.toolCallId),
          content: toolResultContent(r.content, r.isError),
        });
      }
    }
  }
  return out;
}

/**
 * OpenAI's own API refuses max_tokens for its reasoning models and wants max_completion_tokens;
 * compatible servers (OpenRouter, Ollama, vLLM, llama.cpp) mostly know only max_tokens.
 */
function isOpenAIItself(baseURL: string | undefined): boolean {
  return !baseURL || new URL(baseURL).hostname === 'api.openai.com';
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
  retry?: RetryTuning;
  /** The variable that set `model`, named when the API does not serve it. */
  modelSetting?: string;
  /** Extra headers on every request (OpenRouter's app attribution). */
  headers?: Record<string, string>;
  /** Whether the model takes images (OPENAI_VISION, OPENROUTER_VISION); default true. */
  vision?: boolean;
}

/** OpenAI Chat Completions, and every server that speaks it (OpenRouter, Ollama, vLLM, LM Studio, llama.cpp). */
export class OpenAIProvider implements ModelProvider {
  readonly name: string;
  readonly model: string;
  readonly #client: OpenAI;
  readonly #options: OpenAIOptions;
  readonly #modelSetting: string;

  constructor(options: OpenAIOptions) {
    this.name = options.name;
    this.model = options.model;
    this.#options = options;
    this.#modelSetting = options.modelSetting ?? `${options.name.toUpperCase()}_MODEL`;
    // Retries are ours (observable, fallback-aware); the SDK must not retry underneath.
    this.#client = new OpenAI({
      apiKey: options.apiKey,
      baseURL: options.baseURL ?? null,
      maxRetries: 0,
      ...(options.headers ? { defaultHeaders: options.headers } : {}),
    });
  }

  streamRound(request: ModelRequest, callbacks: RoundCallbacks, signal: AbortSignal): Promise<ModelRound> {
    const { maxRetries, log, retry } = this.#options;
    return streamWithRetries(
      {
        provider: this.name,
        host: new URL(this.#client.baseURL).host,
        model: this.model,
        modelSetting: this.#modelSetting,
        maxRetries,
        log,
        ...retry,
      },
      signal,
      callbacks,
      (tracked, watch) => this.#attempt(request, tracked, watch),
    );
  }

  async #attempt(request: ModelRequest, callbacks: RoundCallbacks, watch: StreamWatch): Promise<ModelRound> {
    const { signal } = watch;
    const stream = await this.#client.chat.completions.create(
      {
        model: this.model,
        messages: toOpenAIMessages(request.system, request.messages, { vision: this.#options.vision ?? true }),
        ...(request.tools.length
          ? {
              tools: request.tools.map((t) => ({
                type: 'function' as const,
                function: { name: t.name, description: t.description, parameters: t.inputSchema },
              })),
            }
          : {}),
        ...(isOpenAIItself(this.#options.baseURL)
          ? { max_completion_tokens: request.maxTokens }
          : { max_tokens: request.maxTokens }),
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
      watch.touch();
      if (chunk.usage) {
        const cached = chunk.usage.prompt_tokens_details?.cached_tokens ?? 0;
        usage.inputTokens = chunk.usage.prompt_tokens - cached;
        usage.cacheReadTokens = cached;
        usage.outputTokens = chunk.usage.completion_tokens;
        callbacks.onUsage?.({ ...usage }, this.model);
      }
      const choice = chunk.choices[0];
      if (!choice) continue;
      const delta = choice.delta;
      if (delta?.content) {
        text += delta.content;
        callbacks.onText(delta.content);
      }
      for (const part of delta?.tool_calls ?? []) {
        // Some compatible servers leave out `index`: a part with an id starts a call, one without continues it.
        const index =
          typeof part.index === 'number' ? part.index : part.id || calls.size === 0 ? calls.size : calls.size - 1;
        const call = calls.get(index) ?? { id: '', name: '', json: '' };
        if (part.id) call.id = part.id;
        if (part.function?.name) call.name += part.function.name;
        if (part.function?.arguments) {
          call.json += part.function.arguments;
          callbacks.onOutputBytes?.(Buffer.byteLength(part.function.arguments, 'utf8'));
        }
        calls.set(index, call);
      }
      if (choice.finish_reason) stopReason = STOP[choice.finish_reason] ?? 'other';
    }
    // The SDK may end the iteration quietly when aborted; a stop must not look like a cut stream.
    signal.throwIfAborted();
    // No finish_reason: the stream was cut; its partial tool calls must not be used.
    if (!stopReason) throw new Error('the model stream ended without a finish_reason');
    const toolCalls = distinctToolCallIds(
      [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => toolCallFromJson(c.id, c.name, c.json)),
      request.messages,
    );
    // Ollama and some others finish with 'stop' even when they called tools.
    if (toolCalls.length > 0 && stopReason === 'end_turn') stopReason = 'tool_use';
    return { text, toolCalls, stopReason, usage, provider: this.name, model: this.model, fallbacks: [] };
  }
}
