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

/**
 * A file a person sent that the model sees as itself rather than as text: an image, or a PDF for a
 * provider that reads documents. Its name and where it was saved are in the message's text too, so
 * a provider that cannot show it still knows of it.
 */
export const Attachment = z.object({
  kind: z.enum(['image', 'document']),
  /** From the bytes (src/files), never from the name: image/png, image/jpeg, image/gif, image/webp, application/pdf. */
  mediaType: z.string().min(1),
  /** The bytes, base64. */
  data: z.string().min(1),
  name: z.string(),
  /** A document's text layer (bounded, src/files/pdf-text.ts), for a provider that reads no documents. */
  text: z.string().optional(),
  /**
   * A document's pages, counted once when it was received (src/files/pdf-pages.ts), or the most a
   * request may carry when they could not be: what a budget holds for it at every call.
   */
  pages: z.number().int().positive().optional(),
});
export type Attachment = z.infer<typeof Attachment>;

const UserMessage = z.object({
  role: z.literal('user'),
  text: z.string(),
  attachments: z.array(Attachment).optional(),
});
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

/**
 * A message as later turns read it: a person's images and documents were shown in their own turn
 * and stay saved in the workspace, where the message's note says; sending them again with every
 * later request would only grow it.
 */
export function withoutAttachments(message: Message): Message {
  if (message.role !== 'user' || !message.attachments) return message;
  const { attachments: _shown, ...rest } = message;
  return rest;
}
