import type { Message } from '../../../src/agent/messages.ts';
import { parseScript, type Script } from '../../../src/agent/providers/scripted.ts';
import { fromScript } from './anthropic-server.ts';
import { startFakeModelServer, type FakeModelServer } from './plan.ts';

/**
 * A fake OpenAI Chat Completions API (POST /chat/completions, stream: true): `chat.completion.chunk`
 * data lines — role, content deltas, tool_calls deltas by index (id and name first, then argument
 * fragments), a finish_reason chunk, a usage chunk with empty choices — then `data: [DONE]`.
 */
export function startFakeOpenAI(options: { script?: Script } = {}): Promise<FakeModelServer> {
  const script = options.script ? parseScript(options.script) : undefined;
  return startFakeModelServer({
    path: /\/chat\/completions(\?.*)?$/,
    done: '[DONE]',
    errorBody: (status, body) =>
      typeof body === 'object' && body
        ? body
        : {
            error: { message: String(body), type: status === 429 ? 'rate_limit_exceeded' : 'server_error', code: null },
          },
    render(r, emit) {
      const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-fake' };
      const chunk = (delta: unknown, finish: string | null = null) =>
        emit(undefined, { ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
      chunk({ role: 'assistant', content: '' });
      for (const t of r.text ?? []) chunk({ content: t });
      for (const [i, call] of (r.toolCalls ?? []).entries()) {
        chunk({
          tool_calls: [{ index: i, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
        });
        for (const j of call.json) chunk({ tool_calls: [{ index: i, function: { arguments: j } }] });
      }
      const finish = r.stop === 'max_tokens' ? 'length' : r.toolCalls?.length ? 'tool_calls' : 'stop';
      chunk({}, finish);
      const usage = r.usage ?? { input: 10, output: 5 };
      emit(undefined, {
        ...base,
        choices: [],
        usage: {
          prompt_tokens: usage.input + (usage.cacheRead ?? 0),
          completion_tokens: usage.output,
          total_tokens: usage.input + (usage.cacheRead ?? 0) + usage.output,
          prompt_tokens_details: { cached_tokens: usage.cacheRead ?? 0 },
        },
      });
    },
    responder: script ? (body) => fromScript(script, fromOpenAIRequest(body)) : undefined,
  });
}

export function fromOpenAIRequest(body: Record<string, unknown>): Message[] {
  const out: Message[] = [];
  for (const m of (body.messages as Array<Record<string, unknown>>) ?? []) {
    if (m.role === 'user') out.push({ role: 'user', text: String(m.content) });
    else if (m.role === 'assistant') {
      const calls = (m.tool_calls as Array<{ id: string; function: { name: string; arguments: string } }>) ?? [];
      out.push({
        role: 'assistant',
        text: typeof m.content === 'string' ? m.content : '',
        toolCalls: calls.map((c) => ({
          id: c.id,
          name: c.function.name,
          args: JSON.parse(c.function.arguments || '{}'),
        })),
      });
    } else if (m.role === 'tool') {
      const result = { toolCallId: String(m.tool_call_id), name: 'tool', content: String(m.content), isError: false };
      const last = out.at(-1);
      if (last?.role === 'tool') last.results.push(result);
      else out.push({ role: 'tool', results: [result] });
    }
  }
  return out;
}
