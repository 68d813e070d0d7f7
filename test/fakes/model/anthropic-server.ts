import type { Message } from '../../../src/agent/messages.ts';
import { planRound, parseScript, type Script } from '../../../src/agent/providers/scripted.ts';
import { pieces, startFakeModelServer, type FakeModelServer, type FakeResponse } from './plan.ts';

/**
 * A fake Anthropic Messages API (POST /v1/messages, stream: true) speaking the documented SSE
 * sequence: message_start, ping, content_block_start / content_block_delta (text_delta,
 * input_json_delta) / content_block_stop per block, message_delta (stop_reason, usage), message_stop.
 */
export function startFakeAnthropic(options: { script?: Script } = {}): Promise<FakeModelServer> {
  const script = options.script ? parseScript(options.script) : undefined;
  return startFakeModelServer({
    path: /^\/v1\/messages(\?.*)?$/,
    errorBody: (status, body) =>
      typeof body === 'object' && body
        ? body
        : {
            type: 'error',
            error: {
              type: status === 529 ? 'overloaded_error' : status === 429 ? 'rate_limit_error' : 'api_error',
              message: String(body),
            },
          },
    render(r, emit) {
      let index = 0;
      const usage = r.usage ?? { input: 10, output: 5 };
      emit('message_start', {
        type: 'message_start',
        message: {
          id: 'msg_fake',
          type: 'message',
          role: 'assistant',
          model: 'claude-fake',
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
      });
      emit('ping', { type: 'ping' });
      if (r.text?.length) {
        emit('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
        for (const t of r.text) {
          emit('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: t } });
        }
        emit('content_block_stop', { type: 'content_block_stop', index });
        index += 1;
      }
      for (const call of r.toolCalls ?? []) {
        emit('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
        });
        for (const j of call.json) {
          emit('content_block_delta', {
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json: j },
          });
        }
        emit('content_block_stop', { type: 'content_block_stop', index });
        index += 1;
      }
      emit('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: r.stop ?? (r.toolCalls?.length ? 'tool_use' : 'end_turn'), stop_sequence: null },
        usage: { output_tokens: usage.output },
      });
      emit('message_stop', { type: 'message_stop' });
    },
    responder: script ? (body) => fromScript(script, fromAnthropicRequest(body)) : undefined,
  });
}

/** The request's messages in neutral form, so a script can decide the round. */
export function fromAnthropicRequest(body: Record<string, unknown>): Message[] {
  const out: Message[] = [];
  for (const m of (body.messages as Array<{ role: string; content: unknown }>) ?? []) {
    const blocks =
      typeof m.content === 'string'
        ? [{ type: 'text', text: m.content }]
        : (m.content as Array<Record<string, unknown>>);
    if (m.role === 'assistant') {
      out.push({
        role: 'assistant',
        text: blocks
          .filter((b) => b.type === 'text')
          .map((b) => String(b.text))
          .join(''),
        toolCalls: blocks
          .filter((b) => b.type === 'tool_use')
          .map((b) => ({ id: String(b.id), name: String(b.name), args: b.input as Record<string, unknown> })),
      });
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
          isError: Boolean(b.is_error),
        })),
      });
    }
    const text = blocks
      .filter((b) => b.type === 'text')
      .map((b) => String(b.text))
      .join('');
    if (text.trim()) out.push({ role: 'user', text });
  }
  return out;
}

export function fromScript(script: ReturnType<typeof parseScript>, messages: Message[]): FakeResponse {
  const round = planRound(script, messages);
  if (round.error) return { kind: 'error', status: 500, body: round.error };
  return {
    kind: 'stream',
    text: round.text ? pieces(round.text, round.chunkSize) : [],
    toolCalls: round.toolCalls.map((c) => ({ id: c.id, name: c.name, json: pieces(c.json, 7) })),
    delayMs: round.delayMs,
  };
}
