import type { Logger } from 'pino';
import type { Pool } from '../db/pool.ts';
import type { WorkItem, WorkItemDraft } from '../core/work-item.ts';
import type { Requester } from '../core/person.ts';
import type { ReplyTarget } from '../core/reply-target.ts';
import { enqueueInboundWorkItem, enqueueWorkItem } from '../queue/turn-lifecycle.ts';
import type { ApprovalService } from './service.ts';
import { SpanKind, withSpan } from '../telemetry/spans.ts';

/** The work item a platform asks for, less what the core sets: who asks and the conversation mode. */
export type AdmissionDraft = Omit<WorkItemDraft, 'mode' | 'requester'>;

/** A platform's request for a turn; the core decides whether the person may have one. */
export interface AdmissionRequest {
  requester: Requester;
  /** Where the person spoke: the place the policy judges (the reply may go to a thread started there). */
  place: ReplyTarget;
  /**
   * The work item; a function is called only once the person is admitted, for drafts that need a
   * visible step first (posting the header a skill run replies under). It returns undefined when
   * that step failed and the platform told the person already: nothing is enqueued.
   */
  draft: AdmissionDraft | (() => Promise<AdmissionDraft | undefined>);
  /**
   * A run that waits its turn whatever the conversation's mode: a skill run or a console line. It
   * never steers a running turn nor withdraws a card (the policy's mode is for messages in a thread).
   */
  queued?: boolean;
  /** The platform event's own id: a redelivered event makes no second work item. Absent: always new. */
  eventId?: string;
  /**
   * A platform call the item depends on (creating the thread it replies in), run after the item is
   * written and before it commits; if it throws, nothing is kept and the error is rethrown.
   */
  beforeCommit?: () => Promise<void>;
}

export type AdmissionResult =
  /** Someone the policy does not serve there: show them `refusal`, and nobody else. */
  | { ok: false; refusal: string }
  /** Enqueued; `item` is undefined when the event was taken already (a redelivery, another replica). */
  | { ok: true; item: WorkItem | undefined };

export interface AdmissionDeps {
  /** Where the enqueue runs: the process's admission pool, which nothing else queues in (src/wiring/database.ts). */
  pool: Pool;
  approvals: ApprovalService;
  log: Logger;
  /** The platform whose adapter asks: it may ask only for its own people and places. */
  platform: string;
}

/**
 * The one way in for work from every platform: the policy's `mayUse` where the person wrote, the
 * conversation mode the policy sets there, the durable enqueue (once per platform event: the
 * event's dedupe mark and the item commit together), then the cards a steering message superseded,
 * which the database closed already, are shown closed.
 */
export async function admit(deps: AdmissionDeps, request: AdmissionRequest): Promise<AdmissionResult> {
  const { requester, place, eventId, beforeCommit } = request;
  if (requester.platform !== deps.platform || place.platform !== deps.platform) {
    // An adapter speaks for its own platform: anything else is a bug that would borrow another
    // platform's rules (the console's operator is admitted whatever the policy says).
    throw new Error(
      `the ${deps.platform} adapter asked to admit ${requester.platform}:${requester.userId} in ${place.platform}:${place.channel}`,
    );
  }
  const admission = deps.approvals.mayUse(requester, place);
  if (!admission.ok) {
    deps.log.info(
      { platform: place.platform, user: requester.userId, workspace: requester.workspace, channel: place.channel },
      'message refused by the policy',
    );
    return { ok: false, refusal: admission.refusal };
  }
  const draft = typeof request.draft === 'function' ? await request.draft() : request.draft;
  if (!draft) return { ok: true, item: undefined };
  const full: WorkItemDraft = request.queued
    ? { ...draft, requester }
    : { ...draft, requester, mode: deps.approvals.conversationMode(draft.reply) };
  const ingress = { platform: place.platform, eventId, conversationId: full.conversationId };
  const item = await withSpan(`ingress ${place.platform}`, ingressSpan(ingress), async () =>
    eventId === undefined
      ? enqueueWorkItem(deps.pool, full)
      : enqueueInboundWorkItem(deps.pool, `${place.platform}:${eventId}`, full, beforeCommit ? { beforeCommit } : {}),
  );
  if (item && (full.mode === 'steer' || full.mode === 'interrupt')) {
    deps.approvals
      .showSuperseded(item.id)
      .catch((error: unknown) =>
        deps.log.warn({ err: error, workItemId: item.id }, 'could not show a superseded card'),
      );
  }
  return { ok: true, item };
}

/** The inbound event's span: the root of a turn's trace, named by the platform's own event id. */
function ingressSpan(event: { platform: string; eventId: string | undefined; conversationId: string }) {
  return {
    kind: SpanKind.SERVER,
    conversationId: event.conversationId,
    attributes: {
      'countersign.platform': event.platform,
      'countersign.conversation.id': event.conversationId,
      ...(event.eventId !== undefined ? { 'countersign.event.id': event.eventId } : {}),
    },
  };
}
