import type { Attributes } from '@opentelemetry/api';

/**
 * The OpenTelemetry GenAI semantic conventions for the spans of model calls and tool runs. The
 * conventions are still marked development, so the names are written here (as their docs advise
 * for incubating names) rather than imported from `@opentelemetry/semantic-conventions/incubating`,
 * whose names may change in any minor release.
 */
const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  /** The provider's name before semantic conventions 1.37; dropped with `gen_ai_latest_experimental`. */
  system: 'gen_ai.system',
  requestModel: 'gen_ai.request.model',
  maxTokens: 'gen_ai.request.max_tokens',
  responseModel: 'gen_ai.response.model',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheWriteTokens: 'gen_ai.usage.cache_creation.input_tokens',
  conversation: 'gen_ai.conversation.id',
  systemInstructions: 'gen_ai.system_instructions',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
} as const;

/** How GenAI spans are written; set once by `startTelemetry` from the standard variables. */
const settings = {
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: prompts, answers, tool arguments and results. */
  captureContent: false,
  /** OTEL_SEMCONV_STABILITY_OPT_IN includes `gen_ai_latest_experimental`: the newest names only. */
  latestOnly: false,
};

export function configureGenAi(env: { captureContent: boolean; latestOnly: boolean }): void {
  settings.captureContent = env.captureContent;
  settings.latestOnly = env.latestOnly;
}

/** Whether spans may carry what people and the model wrote. */
export function capturesContent(): boolean {
  return settings.captureContent;
}

function withConversation(attributes: Attributes, conversationId: string | undefined): Attributes {
  return conversationId === undefined ? attributes : { ...attributes, [GEN_AI.conversation]: conversationId };
}

/** A model call's span name and its attributes known before the call. */
export function chatSpan(
  provider: string,
  model: string,
  request: { maxTokens: number; conversationId: string | undefined },
): { name: string; attributes: Attributes } {
  const attributes: Attributes = {
    [GEN_AI.operation]: 'chat',
    [GEN_AI.provider]: provider,
    ...(settings.latestOnly ? {} : { [GEN_AI.system]: provider }),
    [GEN_AI.requestModel]: model,
    [GEN_AI.maxTokens]: request.maxTokens,
  };
  return { name: `chat ${model}`, attributes: withConversation(attributes, request.conversationId) };
}

/** What a finished model round adds to its span. */
export function chatResult(round: {
  provider: string;
  model: string;
  stopReason: string;
  usage: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number };
}): Attributes {
  // After a fallback the provider that answered is not the one asked first: the span names it.
  return {
    [GEN_AI.provider]: round.provider,
    ...(settings.latestOnly ? {} : { [GEN_AI.system]: round.provider }),
    [GEN_AI.responseModel]: round.model,
    [GEN_AI.finishReasons]: [round.stopReason],
    [GEN_AI.inputTokens]: round.usage.inputTokens,
    [GEN_AI.outputTokens]: round.usage.outputTokens,
    [GEN_AI.cacheReadTokens]: round.usage.cacheReadTokens,
    [GEN_AI.cacheWriteTokens]: round.usage.cacheWriteTokens,
  };
}

/** The prompt and answer of a model call, as the conventions' JSON, only when content is captured. */
export function chatContent(system: string, input: unknown[], output: unknown[]): Attributes {
  if (!settings.captureContent) return {};
  return {
    [GEN_AI.systemInstructions]: JSON.stringify([{ type: 'text', content: system }]),
    [GEN_AI.inputMessages]: JSON.stringify(input),
    [GEN_AI.outputMessages]: JSON.stringify(output),
  };
}

/** A tool run's span name and attributes (`outcome`: why it runs — the policy allowed it, a grant, a person). */
export function toolSpan(
  call: { id: string; name: string; args: unknown },
  conversationId: string,
  outcome: string,
): { name: string; attributes: Attributes } {
  const attributes: Attributes = {
    [GEN_AI.operation]: 'execute_tool',
    [GEN_AI.toolName]: call.name,
    [GEN_AI.toolCallId]: call.id,
    [GEN_AI.toolType]: 'function',
    'countersign.policy.outcome': outcome,
    ...(settings.captureContent ? { [GEN_AI.toolArguments]: JSON.stringify(call.args) } : {}),
  };
  return { name: `execute_tool ${call.name}`, attributes: withConversation(attributes, conversationId) };
}

/** What a finished tool run adds to its span: whether it failed, and its result when content is captured. */
export function toolResult(output: { content: string; isError?: boolean }): Attributes {
  return {
    'countersign.tool.is_error': output.isError === true,
    ...(settings.captureContent ? { [GEN_AI.toolResult]: output.content } : {}),
  };
}
