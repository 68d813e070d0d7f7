import Anthropic from '@anthropic-ai/sdk';
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

type WireMessage = Anthropic.MessageParam;
type Block = Anthropic.ContentBlockParam;

/**
 * The API rejects empty and whitespace-only text blocks; a neutral user message can be empty
 * (an attachment-only post, a bare mention), so it travels as a visible placeholder.
 */
const EMPTY_USER_TEXT = '(empty message)';

/** Tool ids must match ^[a-zA-Z0-9_-]+$; ids minted by another provider may not. */
function wireToolId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, '_');
}

/** A person's images and PDFs as the API's image and document blocks, before the text that names them. */
function attachmentBlocks(attachments: readonly Attachment[] | undefined): Block[] {
  return (attachments ?? []).map((a): Block => {
    if (a.kind === 'image') {
      const media_type = a.mediaType as Anthropic.Base64ImageSource['media_type'];
      return { type: 'image', source: { type: 'base64', media_type, data: a.data } };
    }
    return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: a.data }, title: a.name };
  });
}

/**
 * Neutral messages → Messages API shape. Tool results travel in a user message; consecutive
 * messages of one role are merged because the API wants them alternating.
 */
export function toAnthropicMessages(messages: Message[]): WireMessage[] {
  const out: WireMessage[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = out.at(-1);
    if (last && last.role === role) (last.content as Block[]).push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'user')
      push('user', [
        ...attachmentBlocks(m.attachments),
        { type: 'text', text: m.text.trim() ? m.text : EMPTY_USER_TEXT },
      ]);
    else if (m.role === 'assistant') {
      const blocks: Block[] = [];
      if (m.text.trim()) blocks.push({ type: 'text', text: m.text });
      for (const call of m.toolCalls) {
        blocks.push({ type: 'tool_use', id: wireToolId(call.id), name: call.name, input: call.args });
      }
      push('assistant', blocks);
    } else {
      push(
        'user',
        m.results.map((r) => ({
          type: 'tool_result',
          tool_use_id: wireToolId(r.toolCallId),
          content: r.content,
          is_error: r.isError,
        })),
      );
    }
  }
  return out;
}

const EPHEMERAL = { type: 'ephemeral' } as const;

/**
 * Prompt-cache breakpoints on the conversation (the tools and the system prompt carry their own):
 * one at the end of the newest request a person wrote, so every round of a turn reads the history up
 * to it from cache; one at the very end, so the next round — and the next turn, whose request starts
 * with this one — reads everything sent so far. The API looks back up to 20 blocks from a breakpoint
 * for an earlier write, which a round or a turn's new blocks stay well within.
 */
function withConversationBreakpoints(messages: WireMessage[]): WireMessage[] {
  const mark = (index: number) => {
    const blocks = messages[index]?.content as Block[] | undefined;
    const last = blocks?.at(-1);
    if (last && !('cache_control' in last && last.cache_control)) {
      blocks![blocks!.length - 1] = { ...last, cache_control: EPHEMERAL } as Block;
    }
  };
  const request = messages.findLastIndex(
    (m) => m.role === 'user' && (m.content as Block[]).some((b) => b.type === 'text'),
  );
  if (request >= 0) mark(request);
  mark(messages.length - 1);
  return messages;
}

const STOP: Record<string, StopReason> = { end_turn: 'end_turn', tool_use: 'tool_use', max_tokens: 'max_tokens' };

export interface AnthropicOptions {
  apiKey: string;
  model: string;
  baseURL?: string;
  maxRetries: number;
  log?: Logger;
  retry?: RetryTuning;
  /** The variable that set `model`, named when the API does not serve it. */
  modelSetting?: string;
  /** Prompt caching (PROMPT_CACHE): breakpoints on the tools, the system prompt and the conversation. Default on. */
  promptCache?: boolean;
}

export class AnthropicProvider implements ModelProvider {
  readonly name = 'anthropic';
  readonly model: string;
  readonly #client: Anthropic;
  readonly #options: AnthropicOptions;
  readonly #modelSetting: string;

  constructor(options: AnthropicOptions) {
    this.model = options.model;
    this.#options = options;
    this.#modelSetting = options.modelSetting ?? 'ANTHROPIC_MODEL';
    // Retries are ours (observable, fallback-aware); the SDK must not retry underneath.
    this.#client = new Anthropic({ apiKey: options.apiKey, baseURL: options.baseURL ?? null, maxRetries: 0 });
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
    const cache = this.#options.promptCache ?? true;
    const tools: Anthropic.ToolUnion[] = request.tools.map((t, i) => ({
      name: t.name,
      description: t.description,
      input_schema: t.inputSchema as Anthropic.Tool.InputSchema,
      // The tool list and the system prompt are the stable prefix of every round: cache it.
      ...(cache && i === request.tools.length - 1 ? { cache_control: EPHEMERAL } : {}),
    }));
    const messages = toAnthropicMessages(request.messages);
    const stream = await this.#client.messages.create(
      {
        model: this.model,
        max_tokens: request.maxTokens,
        ...(request.system.trim()
          ? { system: [{ type: 'text', text: request.system, ...(cache ? { cache_control: EPHEMERAL } : {}) }] }
          : {}),
        messages: cache ? withConversationBreakpoints(messages) : messages,
        ...(tools.length ? { tools } : {}),
        stream: true,
      },
      { signal },
    );
    let text = '';
    const usage = { ...ZERO_USAGE };
    let stopReason: StopReason = 'other';
    let ended = false;
    const blocks = new Map<number, { kind: 'text' | 'tool'; id: string; name: string; json: string }>();
    for await (const event of stream) {
      watch.touch();
      switch (event.type) {
        case 'message_start':
          usage.inputTokens = event.message.usage.input_tokens ?? 0;
          usage.cacheReadTokens = event.message.usage.cache_read_input_tokens ?? 0;
          usage.cacheWriteTokens = event.message.usage.cache_creation_input_tokens ?? 0;
          usage.outputTokens = event.message.usage.output_tokens ?? 0;
          callbacks.onUsage?.({ ...usage }, this.model);
          break;
        case 'content_block_start':
          if (event.content_block.type === 'tool_use') {
            blocks.set(event.index, {
              kind: 'tool',
              id: event.content_block.id,
              name: event.content_block.name,
              json: '',
            });
          } else if (event.content_block.type === 'text') {
            blocks.set(event.index, { kind: 'text', id: '', name: '', json: '' });
            if (event.content_block.text) {
              text += event.content_block.text;
              callbacks.onText(event.content_block.text);
            }
          }
          break;
        case 'content_block_delta':
          if (event.delta.type === 'text_delta') {
            text += event.delta.text;
            callbacks.onText(event.delta.text);
          } else if (event.delta.type === 'input_json_delta') {
            const block = blocks.get(event.index);
            if (block) block.json += event.delta.partial_json;
            callbacks.onOutputBytes?.(Buffer.byteLength(event.delta.partial_json, 'utf8'));
          }
          break;
        case 'message_delta':
          stopReason = STOP[event.delta.stop_reason ?? ''] ?? 'other';
          // Usage here is cumulative for the message; newer API versions repeat the input counts too.
          usage.outputTokens = event.usage.output_tokens ?? usage.outputTokens;
          usage.inputTokens = event.usage.input_tokens ?? usage.inputTokens;
          usage.cacheReadTokens = event.usage.cache_read_input_tokens ?? usage.cacheReadTokens;
          usage.cacheWriteTokens = event.usage.cache_creation_input_tokens ?? usage.cacheWriteTokens;
          callbacks.onUsage?.({ ...usage }, this.model);
          break;
        case 'message_stop':
          ended = true;
          break;
        default:
          break;
      }
    }
    // The SDK ends the iteration quietly when aborted; a stop must not look like a cut stream.
    signal.throwIfAborted();
    // A stream that ends without message_stop was cut: its partial tool calls must not be used.
    if (!ended) throw new Error('the model stream ended before message_stop');
    // Anthropic's ids are unique; proxies that speak its API are held to the same rule.
    const toolCalls = distinctToolCallIds(
      [...blocks.entries()]
        .sort(([a], [b]) => a - b)
        .filter(([, b]) => b.kind === 'tool')
        .map(([, b]) => toolCallFromJson(b.id, b.name, b.json)),
      request.messages,
    );
    return { text, toolCalls, stopReason, usage, provider: this.name, model: this.model, fallbacks: [] };
  }
}
