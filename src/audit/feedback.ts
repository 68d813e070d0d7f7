import { Counter } from 'prom-client';
import { transaction, type Pool, type Queryable } from '../db/pool.ts';
import type { Requester } from '../core/person.ts';
import { ReplyTarget } from '../core/reply-target.ts';
import { TEXTS } from '../core/texts.ts';
import { metrics, registry } from '../metrics.ts';
import { auditFeedback } from '../approval/store.ts';
import { readReplyOf } from '../queue/turn-lifecycle.ts';
import { currentVote, deleteVote, lockVoter, upsertVote, type Vote } from './feedback-store.ts';

export type { Vote };

export type FeedbackResult =
  /** `vote`: the person's vote now (null: removed); `text`: what to tell them. */
  { ok: true; vote: Vote | null; text: string } | { ok: false; reason: string };

/** Whether a person may use the bot where the answer was given (the policy's `mayUse`). */
export type MayUse = (person: Requester, reply: ReplyTarget) => { ok: true } | { ok: false; refusal: string };

/** What a click did to a person's vote on an answer. */
type VoteChange =
  { kind: 'first'; vote: Vote } | { kind: 'changed'; vote: Vote; previous: Vote } | { kind: 'removed'; previous: Vote };

/**
 * Votes that stopped standing. With `countersign_feedback_total` (votes that took effect) it gives
 * the votes standing now, each person's counted once: total − withdrawn, per platform and vote.
 */
const feedbackWithdrawn = new Counter({
  name: 'countersign_feedback_withdrawn_total',
  help:
    'Votes on final answers that stopped standing (changed to the other vote, or removed by clicking ' +
    'it again), by platform and the vote withdrawn. Votes standing = countersign_feedback_total − this.',
  labelNames: ['platform', 'vote'] as const,
  registers: [registry],
});

const EMOJI: Record<Vote, string> = { up: '👍', down: '👎' };
const NOT_ON_RECORD = 'That answer is no longer on record.';

/**
 * Records a person's vote on a turn's final answer: one per person (platform, workspace and user)
 * and answer. Clicking the other vote changes it; clicking the same vote again removes it. Each
 * change is one audit row (`countersign audit --outcome feedback`) and counted once in the metrics.
 * A person the policy does not let use the bot where the answer was given is refused, and nothing
 * is recorded. The buttons appear with the final text, a moment before the turn is recorded done,
 * so any turn on record can be voted on.
 */
export async function recordFeedback(
  pool: Pool,
  workItemId: string,
  person: Requester,
  vote: Vote,
  mayUse: MayUse,
): Promise<FeedbackResult> {
  const outcome = await transaction(pool, async (client) => {
    const reply = await replyTargetOf(client, workItemId);
    if (!reply) return { ok: false as const, reason: NOT_ON_RECORD };
    const admitted = mayUse(person, reply);
    if (!admitted.ok) return { ok: false as const, reason: admitted.refusal };
    await lockVoter(client, workItemId, person);
    const change = applyVote(vote, await currentVote(client, workItemId, person));
    await storeVote(client, workItemId, person, change);
    await auditVote(client, workItemId, person, change);
    return { ok: true as const, change };
  });
  if (!outcome.ok) return outcome;
  countVote(person.platform, outcome.change);
  return describe(outcome.change);
}

/** The vote a click leaves: the same vote again takes it back, the other one replaces it. */
function applyVote(clicked: Vote, previous: Vote | undefined): VoteChange {
  if (previous === undefined) return { kind: 'first', vote: clicked };
  if (previous === clicked) return { kind: 'removed', previous };
  return { kind: 'changed', vote: clicked, previous };
}

function countVote(platform: string, change: VoteChange): void {
  if (change.kind !== 'removed') metrics.feedback.inc({ platform, vote: change.vote });
  if (change.kind !== 'first') feedbackWithdrawn.inc({ platform, vote: change.previous });
}

function describe(change: VoteChange): FeedbackResult {
  if (change.kind === 'removed')
    return { ok: true, vote: null, text: `Your ${EMOJI[change.previous]} is removed from this answer.` };
  return { ok: true, vote: change.vote, text: TEXTS.feedbackRecorded(change.vote) };
}

async function replyTargetOf(db: Queryable, workItemId: string): Promise<ReplyTarget | undefined> {
  const row = await readReplyOf(db, workItemId);
  if (!row) return undefined;
  const reply = ReplyTarget.safeParse(row.reply);
  return reply.success ? reply.data : undefined;
}

async function storeVote(db: Queryable, workItemId: string, person: Requester, change: VoteChange): Promise<void> {
  if (change.kind === 'removed') return deleteVote(db, workItemId, person);
  await upsertVote(db, workItemId, person, change.vote);
}

/** One row per change: `vote` is the vote now (null: removed), `previous` the one it replaced. */
async function auditVote(db: Queryable, workItemId: string, person: Requester, change: VoteChange): Promise<void> {
  const detail = {
    workItemId,
    vote: change.kind === 'removed' ? null : change.vote,
    previous: change.kind === 'first' ? null : change.previous,
  };
  await auditFeedback(db, person, detail);
}
