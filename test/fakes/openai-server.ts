import type { Message } from '../../src/agent/messages.ts';
import { TOOL_ERROR_PREFIX } from '../../src/agent/providers/openai.ts';
import { parseScript, type Script } from '../../src/agent/providers/scripted.ts';
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
 * A fake OpenAI Chat Completions API (POST …/chat/completions, `stream: true`), which is also what
 * OpenRouter, Ollama, vLLM, LM Studio and llama.cpp speak. A stream is `data:` lines of
 * `chat.completion.chunk` objects: the role, content deltas, tool_calls deltas by `index` (id, type
 * and function.name in the first, then argument fragments), a chunk with finish_reason, then — when
 * the request asked with stream_options.include_usage — a usage chunk with empty `choices`, and
 * `data: [DONE]`. Errors are `{error:{message, type, param, code}}` with an `x-request-id` header; a
 * failure after the stream started is a `data:` line carrying an `error` object (OpenRouter puts the
 * HTTP-like status in error.code). With `models`, any other model id gets OpenAI's 404
 * `model_not_found`. A tool call's id may be left out, as some compatible servers do. Requests the real API rejects (a tool message not answering a
 * preceding tool call, unanswered tool calls, ids over 40 characters) get a 400.
 *
 *   const fake = createFakeOpenAI();
 *   fake.enqueue({ kind: 'stream', toolCalls: [{ id: 'call_1', name: 'status', json: ['{"a":', '1}'] }] });
 *   const { url, close } = await fake.start();   // new OpenAI({ baseURL: `${url}/v1`, ... })
 */

const ERROR_BY_STATUS: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  402: { type: 'insufficient_quota', code: 'insufficient_quota' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
  500: { type: 'server_error', code: null },
  503: { type: 'server_error', code: null },
};

const STREAM_ERROR: Record<ErrorKind, { message: string; type: string; code: number | null }> = {
  overloaded: { message: 'The model is overloaded', type: 'server_error', code: 503 },
  rate_limit: { message: 'Rate limit exceeded', type: 'rate_limit_exceeded', code: 429 },
  server: { message: 'The server had an error while processing your request', type: 'server_error', code: null },
  invalid_request: { message: 'Invalid request', type: 'invalid_request_error', code: 400 },
};

type WireMessage = Record<string, unknown> & { role?: string };
type WireToolCall = { id?: unknown; type?: unknown; function?: { name?: unknown; arguments?: unknown } };

function validate(body: Record<string, unknown>): string | undefined {
  if (typeof body.model !== 'string' || !body.model) return 'you must provide a model parameter';
  if (body.stream !== true) return 'this fake answers streaming requests only (stream: true)';
  const messages = body.messages as WireMessage[] | undefined;
  if (!Array.isArray(messages) || messages.length === 0) return "Invalid 'messages': empty array.";
  const pending = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m.role === 'tool') {
      const id = String(m.tool_call_id);
      if (!pending.has(id)) {
        return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
      }
      pending.delete(id);
      continue;
    }
    if (pending.size) {
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...pending].join(', ')}`;
    }
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      for (const [j, call] of (m.tool_calls as WireToolCall[]).entries()) {
        const at = `messages[${i}].tool_calls[${j}]`;
        if (typeof call.id !== 'string' || call.id.length > 40) {
          return `Invalid '${at}.id': string too long. Expected a string with maximum length 40.`;
        }
        if (call.type !== 'function') return `Invalid value for '${at}.type'`;
        if (typeof call.function?.arguments !== 'string')
          return `Invalid type for '${at}.function.arguments': expected a string`;
        pending.add(call.id);
      }
    }
  }
  if (pending.size) {
    return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...pending].join(', ')}`;
  }
  return undefined;
}

/** The content part types a user message may carry (Chat Completions: text, image_url, input_audio, file). */
const PART_TYPES = new Set(['text', 'image_url', 'input_audio', 'file']);

/**
 * A user message's content: a string, or an array of typed parts. A model without vision refuses an
 * image part in OpenAI's words ("Invalid content type. image_url is only supported by certain
 * models."); text-only compatible servers refuse it too, in their own.
 */
function contentProblem(body: Record<string, unknown>, vision: boolean): string | undefined {
  for (const [i, m] of ((body.messages as WireMessage[] | undefined) ?? []).entries()) {
    if (m.role !== 'user' || typeof m.content === 'string') continue;
    if (!Array.isArray(m.content)) return `Invalid type for 'messages[${i}].content': expected a string or an array`;
    for (const [j, part] of (m.content as Array<Record<string, unknown>>).entries()) {
      const at = `messages[${i}].content[${j}]`;
      if (!PART_TYPES.has(String(part.type)))
        return `Invalid value: '${String(part.type)}'. Supported values are: 'text', 'image_url', 'input_audio', and 'file'. (${at}.type)`;
      if (part.type === 'text' && typeof part.text !== 'string') return `Missing required parameter: '${at}.text'.`;
      if (part.type === 'image_url') {
        if (!vision) return 'Invalid content type. image_url is only supported by certain models.';
        const url = (part.image_url as { url?: unknown } | undefined)?.url;
        if (typeof url !== 'string' || !/^(https?:|data:image\/(png|jpeg|gif|webp);base64,)/.test(url))
          return `Invalid '${at}.image_url.url': expected a URL or a base64 data URL of a PNG, JPEG, GIF or WebP image.`;
      }
    }
  }
  return undefined;
}

const openaiDialect: Dialect = {
  path: /\/chat\/completions$/,
  requestIdHeader: 'x-request-id',
  errorBody(status, body) {
    if (typeof body === 'object' && body) return body;
    const shape = ERROR_BY_STATUS[status] ?? { type: 'server_error', code: null };
    return { error: { message: String(body ?? 'error'), type: shape.type, param: null, code: shape.code } };
  },
  render(r, request) {
    const withUsage = (request.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
    const base = {
      id: 'chatcmpl-fake',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: String(request.model),
      system_fingerprint: 'fp_fake',
    };
    const data = (value: unknown): SseFrame => ({ data: JSON.stringify(value) });
    // With include_usage, every chunk carries `usage: null` until the last one.
    const chunk = (delta: unknown, finish: string | null = null) =>
      data({
        ...base,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
        ...(withUsage ? { usage: null } : {}),
      });
    const frames: SseFrame[] = [chunk({ role: 'assistant', content: '', refusal: null })];
    for (const content of r.text ?? []) frames.push(chunk({ content }));
    for (const [index, call] of (r.toolCalls ?? []).entries()) {
      frames.push(
        chunk({
          tool_calls: [
            {
              index,
              ...(call.id === undefined ? {} : { id: call.id }),
              type: 'function',
              function: { name: call.name, arguments: '' },
            },
          ],
        }),
      );
      for (const args of call.json) frames.push(chunk({ tool_calls: [{ index, function: { arguments: args } }] }));
    }
    const stop = r.stop ?? (r.toolCalls?.length ? 'tool_use' : 'end_turn');
    frames.push(chunk({}, stop === 'max_tokens' ? 'length' : stop === 'tool_use' ? 'tool_calls' : 'stop'));
    if (withUsage) {
      const usage = r.usage ?? { input: 10, output: 5 };
      const prompt = usage.input + (usage.cacheRead ?? 0);
      frames.push(
        data({
          ...base,
          choices: [],
          usage: {
            prompt_tokens: prompt,
            completion_tokens: usage.output,
            total_tokens: prompt + usage.output,
            prompt_tokens_details: { cached_tokens: usage.cacheRead ?? 0, audio_tokens: 0 },
            completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
          },
        }),
      );
    }
    frames.push({ data: '[DONE]' });
    return frames;
  },
  // OpenAI's words for an unknown or retired model; OpenRouter says 400 "… is not a valid model ID" instead.
  modelNotFound(model) {
    return {
      status: 404,
      body: {
        error: {
          message: `The model \`${model}\` does not exist or you do not have access to it.`,
          type: 'invalid_request_error',
          param: null,
          code: 'model_not_found',
        },
      },
    };
  },
  streamError(kind, message) {
    const { type, code } = STREAM_ERROR[kind];
    return { data: JSON.stringify({ error: { message, type, param: null, code } }) };
  },
  validate: (body) => validate(body) ?? contentProblem(body, true),
};

/** A user message's text, from a string or from its text parts. */
function userText(content: unknown): string {
  if (!Array.isArray(content)) return String(content ?? '');
  return (content as Array<{ type?: string; text?: string }>)
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
}

/** A request's messages in neutral form, so a script can decide the round from the conversation. */
function neutralFromOpenAI(body: Record<string, unknown>): Message[] {
  const out: Message[] = [];
  for (const m of (body.messages as WireMessage[] | undefined) ?? []) {
    if (m.role === 'user') out.push({ role: 'user', text: userText(m.content) });
    else if (m.role === 'assistant') {
      const calls = (m.tool_calls as WireToolCall[] | undefined) ?? [];
      out.push({
        role: 'assistant',
        text: typeof m.content === 'string' ? m.content : '',
        toolCalls: calls.map((c) => {
          let args: Record<string, unknown> = {};
          try {
            args = JSON.parse(String(c.function?.arguments || '{}')) as Record<string, unknown>;
          } catch {
            // A malformed call in history stays a call with no arguments, as the provider recorded it.
          }
          return { id: String(c.id), name: String(c.function?.name), args };
        }),
      });
    } else if (m.role === 'tool') {
      // The provider says a failure in the content (the API has no error flag); read it back as one.
      const content = String(m.content);
      const isError = content.startsWith(TOOL_ERROR_PREFIX);
      const result = {
        toolCallId: String(m.tool_call_id),
        name: 'tool',
        content: isError ? content.slice(TOOL_ERROR_PREFIX.length) : content,
        isError,
      };
      const last = out.at(-1);
      if (last?.role === 'tool') last.results.push(result);
      else out.push({ role: 'tool', results: [result] });
    }
  }
  return out;
}

export interface FakeOpenAIOptions extends FakeModelOptions {
  /** Answer from a scripted-model script once the queue is empty (rounds decided from the conversation). */
  script?: Script;
  /** A model without vision (a text-only local model): a request with an image part gets a 400. */
  textOnly?: boolean;
}

const dialectFor = (options: FakeOpenAIOptions): Dialect =>
  options.textOnly
    ? { ...openaiDialect, validate: (body) => validate(body) ?? contentProblem(body, false) }
    : openaiDialect;

function withScript(options: FakeOpenAIOptions): FakeModelOptions {
  if (!options.script) return options;
  const script = parseScript(options.script);
  return { ...options, responder: (body) => responseFromScript(script, neutralFromOpenAI(body)) };
}

/** @public A fake OpenAI-compatible API that listens once `start()` is called (module docs). */
export function createFakeOpenAI(options: FakeOpenAIOptions = {}): FakeModelApi {
  return createFakeModelServer(dialectFor(options), withScript(options)).api;
}

/** A started fake OpenAI-compatible API; give the SDK `${url}/v1` (or any prefix) as baseURL. */
export function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<StartedFakeModel> {
  return startFake(dialectFor(options), withScript(options));
}
