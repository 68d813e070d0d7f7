import { Counter } from 'prom-client';
import { transaction, type Pool, type Queryable } from '../db/pool.ts';
import type { Requester } from '../core/person.ts';
import { ReplyTarget } from '../core/reply-target.ts';
import { TEXTS } from '../core/texts.ts';
import { metrics, registry } from '../metrics.ts';

export type Vote = 'up' | 'down';

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

/** The person as the vote is keyed: a user id means a person only within its workspace. */
const voterKey = (workItemId: string, person: Requester) =>
  [workItemId, person.platform, person.workspace ?? '', person.userId] as const;

async function replyTargetOf(db: Queryable, workItemId: string): Promise<ReplyTarget | undefined> {
  const { rows } = await db.query<{ reply: unknown }>(
    `SELECT item->'reply' AS reply FROM countersign.work_items WHERE id = $1::uuid`,
    [workItemId],
  );
  if (!rows[0]) return undefined;
  const reply = ReplyTarget.safeParse(rows[0].reply);
  return reply.success ? reply.data : undefined;
}

/** Two quick clicks of one person are applied one after the other, each seeing the other's vote. */
async function lockVoter(db: Queryable, workItemId: string, person: Requester): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))`, [
    JSON.stringify(voterKey(workItemId, person)),
  ]);
}

async function currentVote(db: Queryable, workItemId: string, person: Requester): Promise<Vote | undefined> {
  const { rows } = await db.query<{ vote: Vote }>(
    `SELECT vote FROM countersign.turn_feedback
     WHERE work_item_id = $1::uuid AND platform = $2 AND workspace = $3 AND user_id = $4`,
    [...voterKey(workItemId, person)],
  );
  return rows[0]?.vote;
}

async function storeVote(db: Queryable, workItemId: string, person: Requester, change: VoteChange): Promise<void> {
  if (change.kind === 'removed') return removeVote(db, workItemId, person);
  await db.query(
    `INSERT INTO countersign.turn_feedback (work_item_id, platform, workspace, user_id, vote)
     VALUES ($1::uuid, $2, $3, $4, $5)
     ON CONFLICT (work_item_id, platform, workspace, user_id) DO UPDATE SET vote = EXCLUDED.vote, voted_at = now()`,
    [...voterKey(workItemId, person), change.vote],
  );
}

async function removeVote(db: Queryable, workItemId: string, person: Requester): Promise<void> {
  await db.query(
    `DELETE FROM countersign.turn_feedback
     WHERE work_item_id = $1::uuid AND platform = $2 AND workspace = $3 AND user_id = $4`,
    [...voterKey(workItemId, person)],
  );
}

/** One row per change: `vote` is the vote now (null: removed), `previous` the one it replaced. */
async function auditVote(db: Queryable, workItemId: string, person: Requester, change: VoteChange): Promise<void> {
  const detail = {
    workItemId,
    vote: change.kind === 'removed' ? null : change.vote,
    previous: change.kind === 'first' ? null : change.previous,
  };
  await db.query(`INSERT INTO countersign.approval_audit (event, actor, detail) VALUES ('feedback', $1, $2)`, [
    JSON.stringify(person),
    JSON.stringify(detail),
  ]);
}
