import { z } from 'zod';

/** A person on a platform: who asked for a turn, who clicked a button. */
export const Requester = z.object({
  platform: z.string().min(1),
  userId: z.string().min(1),
  displayName: z.string().optional(),
});
export type Requester = z.infer<typeof Requester>;

/** The `platform:user` key a person is compared and listed by (APPROVERS uses it). */
export function personKey(person: Pick<Requester, 'platform' | 'userId'>): string {
  return `${person.platform}:${person.userId}`;
}
