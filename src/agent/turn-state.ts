import { z } from 'zod';
import { Message, ToolCall } from './messages.ts';
import { ReplyState } from '../reply/reply-stream.ts';
import { CallDecision } from '../core/work-item.ts';

/** Bumped whenever TurnState's shape changes; a checkpoint of another version is ignored. */
export const TURN_STATE_VERSION = 1;

const Usage = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  cacheReadTokens: z.number().int().nonnegative(),
  cacheWriteTokens: z.number().int().nonnegative(),
});

/** Everything a turn needs to resume on another worker after its last completed round. */
export const TurnState = z.object({
  /** Model rounds completed so far. */
  round: z.number().int().nonnegative(),
  /** Messages this turn added to the conversation, starting with the person's message. */
  messages: z.array(Message),
  /** Consecutive empty model answers so far. */
  emptyRetries: z.number().int().nonnegative(),
  usage: Usage,
  /** The reply's messages on the platform, so a resumed turn edits them instead of posting anew. */
  reply: ReplyState,
  /** Visible reply text so far. */
  text: z.string(),
  /** Set once the answer is complete: a replay only delivers it and records the turn. */
  final: z.boolean().default(false),
  /** Calls of the last round that wait for a person's decision. */
  pendingApproval: z.array(ToolCall).default([]),
  /** Set by an approval continuation: the person's decisions on `pendingApproval`. */
  approvalDecisions: z.array(CallDecision).optional(),
  /**
   * A command's turn (`/schedule`): its one call, already in `messages`, was decided by the command,
   * so it is ruled and run without a model round, and its result is the answer.
   */
  commandCall: z.boolean().optional(),
});
export type TurnState = z.infer<typeof TurnState>;
