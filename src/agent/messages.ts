import { z } from 'zod';

/**
 * Provider-neutral conversation messages. They are what Postgres stores and what the agent loop
 * works with; each provider converts them to its own wire shape at its edge only, so a
 * conversation can switch providers between rounds.
 */
export const ToolCall = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  /** Parsed arguments; `{}` when the model sent JSON we could not parse (see `argsError`). */
  args: z.record(z.string(), z.unknown()),
  /** Set when the model's argument JSON was malformed; the loop answers with a tool error. */
  argsError: z.string().optional(),
});
export type ToolCall = z.infer<typeof ToolCall>;

export const ToolResult = z.object({
  toolCallId: z.string().min(1),
  name: z.string().min(1),
  content: z.string(),
  isError: z.boolean().default(false),
  /** Set when a person decided the call on a card: compaction keeps approvals and denials. */
  decision: z.enum(['approved', 'denied']).optional(),
});
export type ToolResult = z.infer<typeof ToolResult>;

const UserMessage = z.object({ role: z.literal('user'), text: z.string() });
export const AssistantMessage = z.object({
  role: z.literal('assistant'),
  text: z.string(),
  toolCalls: z.array(ToolCall).default([]),
});
const ToolResultsMessage = z.object({
  role: z.literal('tool'),
  results: z.array(ToolResult).min(1),
});

export const Message = z.discriminatedUnion('role', [UserMessage, AssistantMessage, ToolResultsMessage]);
export type Message = z.infer<typeof Message>;
type UserMessage = z.infer<typeof UserMessage>;
export type AssistantMessage = z.infer<typeof AssistantMessage>;
type ToolResultsMessage = z.infer<typeof ToolResultsMessage>;
