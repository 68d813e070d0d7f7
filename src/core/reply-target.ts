import { z } from 'zod';

/**
 * Where a work item streams its answer. It is plain data (it rides inside the job payload) so any
 * worker process, on any machine, can reach the reply through the platform's API.
 */
export const ReplyTarget = z.object({
  platform: z.string().min(1),
  /** Slack channel id, Discord channel id (the thread's id when replying in a thread), console session. */
  channel: z.string().min(1),
  /** Slack thread_ts; unused on Discord, where threads are channels. */
  thread: z.string().optional(),
  /** On Discord, the channel a thread (the `channel` above) belongs to, for policies that name channels. */
  parent: z.string().optional(),
  /**
   * The `channel` is a thread only its members see (a Discord private thread): a standing grant made
   * here applies, and is listed, only here, never in `parent`, whose other members cannot see it.
   */
  privateThread: z.boolean().optional(),
  /** Slack team or Discord guild: the scope of the platform's shared rate limits. */
  workspace: z.string().optional(),
  /** The reply's first message, edited first: a placeholder already posted, or posted by the worker. */
  messageId: z.string().optional(),
  /** The user being answered (Slack's native streams outside DMs must name them). */
  recipient: z.string().optional(),
  /**
   * Nobody is watching this reply (a scheduled run, docs/schedules.md): a card it posts mentions its
   * requester, so they are notified; every other card names people without pinging them.
   */
  unattended: z.boolean().optional(),
});
export type ReplyTarget = z.infer<typeof ReplyTarget>;

/** A button on a reply; its `value` is at most 100 characters (Discord's custom_id). */
export interface ReplyButton {
  label: string;
  value: string;
  style: 'primary' | 'danger' | 'secondary';
  /** A link button: a click opens this URL in the person's browser, and `value` is never sent. */
  url?: string;
}
