import { z } from 'zod';

/**
 * What a resumed turn needs to keep editing the same messages instead of posting new ones. Saved in
 * turn checkpoints: a checkpoint written by an older worker must still parse, so fields only grow.
 */
export const ReplyState = z.object({
  messageIds: z.array(z.string()),
  /** Messages that are complete (every message but the last): how much of the text each covers. */
  sealed: z.array(z.object({ length: z.number().int().nonnegative(), shown: z.string() })),
  /** What the live message starts with after a split (a reopened code fence). */
  carry: z.string().default(''),
  /** The placeholder that shows status and Stop while the answer streams natively below it. */
  statusMessageId: z.string().optional(),
  /** A native stream still open: a resumed turn stops it and goes on by editing. */
  streamingMessageId: z.string().optional(),
});
export type ReplyState = z.infer<typeof ReplyState>;
