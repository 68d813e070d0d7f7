import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { slackErrorOf } from './api-errors.ts';
import { LIMITS } from './limits.ts';

/**
 * Who is in a Slack conversation, from `conversations.members` (scopes channels:read, groups:read,
 * im:read, mpim:read). Used to keep a list from showing what happened in a channel to someone who is
 * not in it. Fails closed: a conversation Slack will not list (a scope the install lacks, a private
 * channel the app has left) counts as one the person is not in, and is logged once per channel.
 */
export class SlackMemberships {
  readonly #client: WebClient;
  readonly #log: Logger;
  readonly #warned = new Set<string>();

  constructor(client: WebClient, log: Logger) {
    this.#client = client;
    this.#log = log;
  }

  /** Whether `user` is a member of `channel`. Never throws. */
  async isMember(channel: string, user: string): Promise<boolean> {
    try {
      let cursor: string | undefined;
      do {
        const page = await this.#client.conversations.members({
          channel,
          limit: LIMITS.membersPage,
          ...(cursor ? { cursor } : {}),
        });
        if (page.members?.includes(user)) return true;
        cursor = page.response_metadata?.next_cursor || undefined;
      } while (cursor);
      return false;
    } catch (error) {
      if (!this.#warned.has(channel)) {
        this.#warned.add(channel);
        this.#log.warn(
          { channel, error: slackErrorOf(error) ?? String(error) },
          'could not list the members of a Slack conversation (scopes channels:read, groups:read, im:read, mpim:read?); its grants are left out of lists shown elsewhere',
        );
      }
      return false;
    }
  }
}

/**
 * The grants a viewer may see listed: those of the conversation they are looking from, and those of
 * any other conversation they are a member of (one membership check per conversation).
 */
export async function grantsInTheirConversations<G extends { place: { channel: string } }>(
  grants: readonly G[],
  viewer: string,
  here: string,
  memberships: Pick<SlackMemberships, 'isMember'>,
): Promise<G[]> {
  const channels = new Set(grants.map((g) => g.place.channel).filter((c) => c !== here));
  const theirs = new Set([here]);
  for (const channel of channels) if (await memberships.isMember(channel, viewer)) theirs.add(channel);
  return grants.filter((g) => theirs.has(g.place.channel));
}
