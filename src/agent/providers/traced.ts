import type { Message } from '../messages.ts';
import type { ModelProvider, ModelRequest, ModelRound, RoundCallbacks } from '../model.ts';
import { chatContent, chatResult, chatSpan, capturesContent } from '../../telemetry/gen-ai.ts';
import { activeConversationId, SpanKind, withSpan } from '../../telemetry/spans.ts';

/**
 * A provider whose every round is a `chat` span of the GenAI conventions: the provider and model
 * asked, the tokens used (cache reads and writes too), why it stopped; and, only with
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, the prompt and the answer. A round a
 * fallback provider answered names that provider and model (`ModelRound.provider`).
 */
export function traced(provider: ModelProvider): ModelProvider {
  return {
    get name() {
      return provider.name;
    },
    get model() {
      return provider.model;
    },
    get models() {
      return provider.models;
    },
    streamRound: (request, callbacks, signal) => tracedRound(provider, request, callbacks, signal),
  };
}

async function tracedRound(
  provider: ModelProvider,
  request: ModelRequest,
  callbacks: RoundCallbacks,
  signal: AbortSignal,
): Promise<ModelRound> {
  const conversationId = activeConversationId();
  const { name, attributes } = chatSpan(provider.name, provider.model, {
    maxTokens: request.maxTokens,
    conversationId,
  });
  return withSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const round = await provider.streamRound(request, callbacks, signal);
    span.setAttributes(chatResult(round));
    if (capturesContent()) {
      const answer: Message = { role: 'assistant', text: round.text, toolCalls: round.toolCalls };
      span.setAttributes(
        chatContent(request.system, request.messages.map(conventionMessage), [conventionMessage(answer)]),
      );
    }
    return round;
  });
}

/** A message in the conventions' shape (`gen_ai.input.messages`): a role and its parts. */
function conventionMessage(message: Message): { role: string; parts: unknown[] } {
  switch (message.role) {
    case 'user':
      return { role: 'user', parts: [{ type: 'text', content: message.text }] };
    case 'assistant':
      return {
        role: 'assistant',
        parts: [
          ...(message.text ? [{ type: 'text', content: message.text }] : []),
          ...message.toolCalls.map((c) => ({ type: 'tool_call', id: c.id, name: c.name, arguments: c.args })),
        ],
      };
    case 'tool':
      return {
        role: 'tool',
        parts: message.results.map((r) => ({ type: 'tool_call_response', id: r.toolCallId, response: r.content })),
      };
  }
}
