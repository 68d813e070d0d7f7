import type { Message } from '../../src/agent/messages.ts';
import { parseScript, type Script } from '../../src/agent/providers/scripted.ts';
import { createPromptCache, outputTokens, type CacheUsage, type PromptCacheOptions } from './anthropic-prompt-cache.ts';
import {
  createFakeModelServer,
  responseFromScript,
  startFake,
  type Dialect,
  type ErrorKind,
  type FakeModelApi,
  type FakeModelOptions,
  type SseFrame,
  type StartedFakeModel,
} from './model-http.ts';

/**
 * A fake Anthropic Messages API: POST /v1/messages with `stream: true`, answered with the documented
 * SSE sequence — message_start, ping, then per content block content_block_start /
 * content_block_delta (text_delta or input_json_delta) / content_block_stop, then message_delta
 * (stop_reason, usage) and message_stop. Errors use the API's shape
 * `{type:'error', error:{type, message}, request_id}` with a `request-id` header, and a failure after
 * the stream started is an `event: error` frame. With `models`, any other model id gets the API's
 * 404 `not_found_error` ("model: <id>"). Requests the real API rejects (roles not
 * alternating, a tool_result without its tool_use, empty text blocks, more than four cache
 * breakpoints) get a 400, so a test cannot pass on a request Anthropic would refuse.
 *
 *   const fake = createFakeAnthropic();
 *   fake.enqueue({ kind: 'stream', text: ['Hel', 'lo'] });
 *   const { url, close } = await fake.start();   // new Anthropic({ baseURL: url, ... })
 *   ... fake.requests[0].body ...
 */

const ERROR_TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

const STREAM_ERROR: Record<ErrorKind, { type: string; message: string }> = {
  overloaded: { type: 'overloaded_error', message: 'Overloaded' },
  rate_limit: { type: 'rate_limit_error', message: 'Rate limited' },
  server: { type: 'api_error', message: 'Internal server error' },
  invalid_request: { type: 'invalid_request_error', message: 'Invalid request' },
};

const frame = (event: string, data: unknown): SseFrame => ({ event, data: JSON.stringify(data) });

type Block = Record<string, unknown> & { type?: string };

function blocksOf(content: unknown): Block[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? (content as Block[]) : [];
}

/** Vision and PDF support's documented input rules: base64 sources of the types it reads, images up to 5 MB. */
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];
function mediaProblem(b: Block): string | undefined {
  if (b.type !== 'image' && b.type !== 'document') return undefined;
  const source = b.source as { type?: string; media_type?: string; data?: string } | undefined;
  if (source?.type !== 'base64' || typeof source.data !== 'string' || !source.data)
    return `${b.type}.source: a base64 source with data is required`;
  const types = b.type === 'image' ? IMAGE_TYPES : ['application/pdf'];
  if (!types.includes(String(source.media_type)))
    return `${b.type}.source.media_type: Input should be ${types.map((t) => `'${t}'`).join(', ')}`;
  if (b.type === 'image' && Buffer.from(source.data, 'base64').length > 5 * 1024 * 1024)
    return 'image exceeds 5 MB maximum';
  return undefined;
}

/** The checks of the real API that a provider bug would trip, in its own words where known. */
function validate(body: Record<string, unknown>): string | undefined {
  if (typeof body.model !== 'string' || !body.model) return 'model: Field required';
  if (typeof body.max_tokens !== 'number') return 'max_tokens: Field required';
  if (body.stream !== true) return 'this fake answers streaming requests only (stream: true)';
  const messages = body.messages as Array<{ role: string; content: unknown }> | undefined;
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: at least one message is required';
  if (messages[0]?.role !== 'user') return 'messages: first message must use the "user" role';
  let breakpoints = blocksOf(body.system).filter((b) => b.cache_control).length;
  breakpoints += ((body.tools as Block[] | undefined) ?? []).filter((t) => t.cache_control).length;
  for (const [i, m] of messages.entries()) {
    // Older API versions refused this outright; today's merge such turns silently. The provider must
    // merge them itself (tool results and the next user text in one turn), and the fake holds it to that.
    if (i > 0 && messages[i - 1]?.role === m.role)
      return `messages: roles must alternate between "user" and "assistant" (messages.${i})`;
    const blocks = blocksOf(m.content);
    breakpoints += blocks.filter((b) => b.cache_control).length;
    for (const b of blocks) {
      if (b.type === 'text' && !String(b.text ?? '').trim())
        return `messages.${i}: text content blocks must contain non-whitespace text`;
      if (b.type === 'tool_use' && !/^[a-zA-Z0-9_-]+$/.test(String(b.id)))
        return `messages.${i}: tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
      const source = mediaProblem(b);
      if (source) return `messages.${i}: ${source}`;
    }
    const uses = blocks.filter((b) => b.type === 'tool_use').map((b) => String(b.id));
    const next = messages[i + 1];
    if (m.role === 'assistant' && uses.length && next) {
      const answered = new Set(
        blocksOf(next.content)
          .filter((b) => b.type === 'tool_result')
          .map((b) => String(b.tool_use_id)),
      );
      const unanswered = uses.filter((id) => !answered.has(id));
      if (unanswered.length)
        return `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(', ')}`;
    }
    if (m.role === 'user') {
      const prior = new Set(
        blocksOf(messages[i - 1]?.content)
          .filter((b) => b.type === 'tool_use')
          .map((b) => String(b.id)),
      );
      const orphan = blocks.find((b) => b.type === 'tool_result' && !prior.has(String(b.tool_use_id)));
      if (orphan)
        return `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(orphan.tool_use_id)}`;
    }
  }
  if (breakpoints > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`;
  return undefined;
}

const anthropicDialect: Dialect = {
  path: /\/v1\/messages$/,
  requestIdHeader: 'request-id',
  errorBody(status, body, requestId) {
    if (typeof body === 'object' && body) return body;
    return {
      type: 'error',
      error: { type: ERROR_TYPE_BY_STATUS[status] ?? 'api_error', message: String(body ?? 'error') },
      request_id: requestId,
    };
  },
  render(r, request) {
    const usage = r.usage ?? { input: 10, output: 5 };
    const frames: SseFrame[] = [
      frame('message_start', {
        type: 'message_start',
        message: {
          id: 'msg_fake',
          type: 'message',
          role: 'assistant',
          model: String(request.model),
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: usage.input,
            output_tokens: 1,
            cache_creation_input_tokens: usage.cacheWrite ?? 0,
            cache_read_input_tokens: usage.cacheRead ?? 0,
          },
        },
      }),
      frame('ping', { type: 'ping' }),
    ];
    let index = 0;
    if (r.text?.length) {
      frames.push(
        frame('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }),
      );
      for (const text of r.text) {
        frames.push(
          frame('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } }),
        );
      }
      frames.push(frame('content_block_stop', { type: 'content_block_stop', index }));
      index += 1;
    }
    for (const call of r.toolCalls ?? []) {
      frames.push(
        frame('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: call.id ?? `toolu_fake_${index}`, name: call.name, input: {} },
        }),
      );
      for (const partial_json of call.json) {
        frames.push(
          frame('content_block_delta', {
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json },
          }),
        );
      }
      frames.push(frame('content_block_stop', { type: 'content_block_stop', index }));
      index += 1;
    }
    frames.push(
      frame('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: r.stop ?? (r.toolCalls?.length ? 'tool_use' : 'end_turn'), stop_sequence: null },
        usage: { output_tokens: usage.output },
      }),
      frame('message_stop', { type: 'message_stop' }),
    );
    return frames;
  },
  // What the API answers for an unknown or retired model id: 404 not_found_error naming the model.
  modelNotFound(model, requestId) {
    return {
      status: 404,
      body: { type: 'error', error: { type: 'not_found_error', message: `model: ${model}` }, request_id: requestId },
    };
  },
  streamError(kind, message) {
    const { type } = STREAM_ERROR[kind];
    return frame('error', { type: 'error', error: { type, message } });
  },
  validate,
};

/** A request's messages in neutral form, so a script can decide the round from the conversation. */
function neutralFromAnthropic(body: Record<string, unknown>): Message[] {
  const out: Message[] = [];
  for (const m of (body.messages as Array<{ role: string; content: unknown }> | undefined) ?? []) {
    const blocks = blocksOf(m.content);
    const text = blocks
      .filter((b) => b.type === 'text')
      .map((b) => String(b.text))
      .join('');
    if (m.role === 'assistant') {
      const toolCalls = blocks
        .filter((b) => b.type === 'tool_use')
        .map((b) => ({ id: String(b.id), name: String(b.name), args: (b.input ?? {}) as Record<string, unknown> }));
      out.push({ role: 'assistant', text, toolCalls });
      continue;
    }
    const results = blocks.filter((b) => b.type === 'tool_result');
    if (results.length) {
      out.push({
        role: 'tool',
        results: results.map((b) => ({
          toolCallId: String(b.tool_use_id),
          name: 'tool',
          content: typeof b.content === 'string' ? b.content : JSON.stringify(b.content),
          isError: b.is_error === true,
        })),
      });
    }
    if (text.trim()) out.push({ role: 'user', text });
  }
  return out;
}

export interface FakeAnthropicOptions extends FakeModelOptions {
  /** Answer from a scripted-model script once the queue is empty (rounds decided from the conversation). */
  script?: Script;
  /**
   * Bill prompt caching as the API does (test/fakes/anthropic-prompt-cache.ts): every stream whose
   * response sets no `usage` reports the computed input, cache read and cache write tokens.
   */
  caching?: PromptCacheOptions | true;
}

/** What each billed request reported, in order (with `caching`). */
export interface BilledRequest extends CacheUsage {
  output: number;
}

function withScript(options: FakeAnthropicOptions): FakeModelOptions {
  if (!options.script) return options;
  const script = parseScript(options.script);
  return { ...options, responder: (body) => responseFromScript(script, neutralFromAnthropic(body)) };
}

/** The dialect, billing each stream from a prompt cache of this fake's own. */
function billingDialect(options: FakeAnthropicOptions, billed: BilledRequest[]): Dialect {
  if (!options.caching) return anthropicDialect;
  const cache = createPromptCache(options.caching === true ? {} : options.caching);
  return {
    ...anthropicDialect,
    render(r, request) {
      if (r.usage) return anthropicDialect.render(r, request);
      const usage = cache.account(request);
      const output = outputTokens(
        (r.text ?? []).join(''),
        (r.toolCalls ?? []).flatMap((c) => c.json),
      );
      billed.push({ ...usage, output });
      return anthropicDialect.render({ ...r, usage: { ...usage, output } }, request);
    },
  };
}

/** A fake Anthropic API that listens once `start()` is called. */
export function createFakeAnthropic(options: FakeAnthropicOptions = {}): FakeModelApi & { billed: BilledRequest[] } {
  const billed: BilledRequest[] = [];
  return { ...createFakeModelServer(billingDialect(options, billed), withScript(options)).api, billed };
}

/** A started fake Anthropic API; give its `url` to the SDK as baseURL. `billed`: with `caching`, each stream's usage. */
export async function startFakeAnthropic(
  options: FakeAnthropicOptions = {},
): Promise<StartedFakeModel & { billed: BilledRequest[] }> {
  const billed: BilledRequest[] = [];
  return { ...(await startFake(billingDialect(options, billed), withScript(options))), billed };
}
