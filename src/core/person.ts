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
