import { z } from 'zod';

/** A person on a platform: who asked for a turn, who clicked a button. */
export const Requester = z.object({
  platform: z.string().min(1),
  userId: z.string().min(1),
  displayName: z.string().optional(),
  /**
   * Who vouches for the id: the Slack team (or Grid org) that issued it — another org's for a Slack
   * Connect guest — or the Discord guild the person spoke in (`@me` in a DM). The policy compares
   * people by it; absent on rows stored before it existed.
   */
  workspace: z.string().optional(),
  /** Discord role ids (Slack user group ids) the person had where they spoke, as the platform said. */
  groups: z.array(z.string()).optional(),
  /** A Slack single- or multi-channel guest, as far as the platform said. */
  guest: z.boolean().optional(),
});
export type Requester = z.infer<typeof Requester>;

/** The `platform:user` key a person is compared and listed by (APPROVERS uses it). */
export function personKey(person: Pick<Requester, 'platform' | 'userId'>): string {
  return `${person.platform}:${person.userId}`;
}

/**
 * Platforms whose user ids are unique only within the workspace that issued them (Slack's `U…` ids
 * outside Enterprise Grid). Every other platform's ids name one account everywhere. The policy's
 * own copy of this fact is in src/policy/person.ts, which imports nothing of the app.
 */
const WORKSPACE_SCOPED_IDS: ReadonlySet<string> = new Set(['slack']);

/**
 * The same account, for what a person may do to their own things (stop their turn, take over their
 * follow-up, revoke their grant, list their grants): the same id, from the same workspace where
 * ids are scoped to one. An id another workspace issued is someone else.
 */
export function sameAccount(a: Requester, b: Requester): boolean {
  if (a.platform !== b.platform || a.userId !== b.userId) return false;
  return !WORKSPACE_SCOPED_IDS.has(a.platform) || (a.workspace ?? '') === (b.workspace ?? '');
}

/**
 * Whether `a` could be `b`, for rules that must fail closed (a requester may not countersign their
 * own call): the same platform and user id count as one person even when two payloads name
 * different workspaces, as Slack's do on Enterprise Grid.
 */
export function mayBeSamePerson(
  a: Pick<Requester, 'platform' | 'userId'>,
  b: Pick<Requester, 'platform' | 'userId'>,
): boolean {
  return a.platform === b.platform && a.userId === b.userId;
}
