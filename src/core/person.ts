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
  /**
   * The platform did not say which groups the person is in (a Discord DM carries no roles; a Slack
   * user-group listing failed): `groups` is not all of them. A budget that covers a group looks
   * them up before the turn spends (src/budgets/unknown-groups.ts).
   */
  groupsUnknown: z.boolean().optional(),
  /** A Slack single- or multi-channel guest, as far as the platform said. */
  guest: z.boolean().optional(),
});
export type Requester = z.infer<typeof Requester>;

/** The `platform:user` key a person is compared and listed by (APPROVERS uses it). */
export function personKey(person: Pick<Requester, 'platform' | 'userId'>): string {
  return `${person.platform}:${person.userId}`;
}

/**
 * The same account, where both people act in the same conversation (taking over one's own
 * follow-up, stopping one's own turn from its Stop button or session): the same id, vouched for by
 * the same workspace. Within one conversation the same account always carries the same workspace,
 * so this needs no platform's rules; across places, ask `PlatformDirectory.sameAccount`.
 */
export function sameAccountHere(a: Requester, b: Requester): boolean {
  return a.platform === b.platform && a.userId === b.userId && (a.workspace ?? '') === (b.workspace ?? '');
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
