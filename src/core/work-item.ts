import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { Requester } from './person.ts';
import { ReplyTarget } from './reply-target.ts';

/** Lower runs first (graphile-worker's order). */
export const Priority = {
  CRITICAL: 1,
  HIGH: 10,
  NORMAL: 100,
  LOW: 1000,
  IDLE: 10000,
} as const;
type PriorityName = keyof typeof Priority;
type PriorityValue = (typeof Priority)[PriorityName];

const PriorityValue = z.union([
  z.literal(Priority.CRITICAL),
  z.literal(Priority.HIGH),
  z.literal(Priority.NORMAL),
  z.literal(Priority.LOW),
  z.literal(Priority.IDLE),
]);

const WorkItemType = z.enum(['CHAT', 'RESEARCH', 'CODE', 'REVIEW', 'MERGE', 'CUSTOM']);
type WorkItemType = z.infer<typeof WorkItemType>;

/**
 * The bytes a card showed (share_file): their sha256 and size, recorded with the envelope when the
 * card is made. An approval covers exactly these bytes; a file changed since is refused, not shared.
 */
export const ContentPin = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  size: z.number().int().nonnegative(),
});
export type ContentPin = z.infer<typeof ContentPin>;

/** A decision on one requested tool call, as submitted from an Approve/Deny click. */
export const CallDecision = z.object({
  toolCallId: z.string().min(1),
  approved: z.boolean(),
  /** For a question the agent asked: the option the person chose. */
  answer: z.string().optional(),
  /** Why an approved call was not run after all (the policy changed), or why a person denied it. */
  reason: z.string().max(2000).optional(),
  /** The standing grant this approval also created ("Always allow here"). */
  grantId: z.string().optional(),
  /** The bytes the card showed, which the approved call must still find (set when the turn resumes). */
  content: ContentPin.optional(),
});
export type CallDecision = z.infer<typeof CallDecision>;

/**
 * A file a person sent with the message, as the platform describes it: recorded by the inbound
 * adapter, downloaded by the worker when the turn starts (src/files, docs/files.md). Nothing here is
 * trusted: the name is sanitized and the type read from the bytes before anything is written.
 */
export const FileRef = z.object({
  /** The platform's id of the file (a Slack file id, a Discord attachment id, a local path). */
  id: z.string().min(1).max(2000),
  name: z.string().max(2000),
  /** The size the platform says the file has; a download shorter than it is truncated. */
  size: z.number().int().nonnegative().optional(),
  /** The type the platform (or the sender) claims; never decides how the file is read. */
  mimetype: z.string().max(300).optional(),
  /** Where the adapter downloads it from; only the adapter knows which hosts it may be on. */
  url: z.string().max(4000).optional(),
});
export type FileRef = z.infer<typeof FileRef>;

/**
 * A tool call a command decided on before the turn (`/schedule WHEN TASK` is a `schedule_task` call):
 * the loop rules it like the model's calls — policy, card, grant — and its result is the answer, with
 * no model round. Only the core's command readers (ctx.workCommand) make one.
 */
export const CommandCall = z.object({
  name: z.string().min(1).max(200),
  args: z.record(z.string(), z.unknown()),
});
export type CommandCall = z.infer<typeof CommandCall>;

const WorkItemInput = z.object({
  /** The person's message; absent for continuations. */
  prompt: z.string().max(100_000).optional(),
  /** A skill to start the turn with (a "run skill" command). */
  skill: z.string().optional(),
  /** Set on an approval continuation: the consumed envelope and the decisions on its calls. */
  approval: z
    .object({
      envelopeId: z.string().min(1),
      decisions: z.array(CallDecision),
      decidedBy: Requester,
      /**
       * Who approved each approved call: a card's calls may be decided click by click, by several
       * people. Written by the approval service, never taken from a click's payload.
       */
      approvers: z.array(z.object({ toolCallId: z.string(), by: Requester })).optional(),
    })
    .optional(),
  /** Stable across all continuations of one turn. */
  approvalContextId: z.string().optional(),
  /** Files sent with the message; more than the per-message cap are named in a note, not read. */
  files: z.array(FileRef).max(100).optional(),
  /** The one call a command's turn makes, instead of asking the model (see CommandCall). */
  call: CommandCall.optional(),
  /**
   * The platform's id of the person's message when its event carried none of its files though the
   * message may have some (Slack's app_mention): the worker reads the message for them
   * (`Outbound.messageFiles`), so the ingress never waits on a platform call.
   */
  filesOfMessage: z.string().min(1).max(200).optional(),
});

/**
 * What a message does while its conversation is busy (docs/conversations.md): `queue` waits for
 * the running turn, `steer` joins it at its next safe point, `interrupt` stops it there, `collect`
 * merges a quick burst into one turn.
 */
export const ConversationMode = z.enum(['queue', 'steer', 'interrupt', 'collect']);
export type ConversationMode = z.infer<typeof ConversationMode>;

/**
 * The universal unit of agent work. Chat turns, approval continuations, skill runs and background
 * research all travel as work items through the same durable queue.
 */
export const WorkItem = z.object({
  id: z.uuid(),
  type: WorkItemType,
  priority: PriorityValue,
  conversationId: z.string().min(1).max(500),
  requester: Requester,
  input: WorkItemInput,
  /** Caller metadata, opaque to the queue. */
  payload: z.record(z.string(), z.unknown()).default({}),
  reply: ReplyTarget,
  /**
   * Text the worker posts first when `reply` has no message yet (e.g. "…"). Inbound adapters enqueue
   * before making any platform call, so a platform that fails cannot lose the message: the worker
   * posts this (retrying like any job), records its id on the item, and streams the reply into it.
   */
  placeholder: z.string().min(1).optional(),
  /** The conversation's mode when the message arrived (adapters ask the policy); absent: `queue`. */
  mode: ConversationMode.optional(),
  createdAt: z.iso.datetime(),
});
export type WorkItem = z.infer<typeof WorkItem>;
export type WorkItemDraft = Omit<z.input<typeof WorkItem>, 'id' | 'createdAt'> & { id?: string; createdAt?: string };

export function newWorkItem(draft: WorkItemDraft): WorkItem {
  return WorkItem.parse({ id: randomUUID(), createdAt: new Date().toISOString(), ...draft });
}
