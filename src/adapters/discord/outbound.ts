import { DiscordAPIError, REST, RateLimitError, Routes } from 'discord.js';
import type { Requester } from '../../core/person.ts';
import type { FileRef } from '../../core/work-item.ts';
import { downloadAttachment } from './files.ts';
import type { PartialEdit, RateBuckets } from '../../reply/rate-bucket.ts';
import type { Outbound, OutboundFile, PostedMessage, ReplyOptions } from '../../reply/outbound.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';
import { metrics } from '../../metrics.ts';
import { MessageFlag, NO_MENTIONS, replyButtonRows, type ApiMessagePayload } from './components/index.ts';
import { neutralizeMentions } from './format/index.ts';
import { LIMITS } from './limits.ts';
import { channelEditBucketKey, DISCORD_BUCKETS, globalBucketKey } from './rate-limits.ts';

/**
 * Bytes one attachment may have: Discord's default upload limit (10 MiB) for a bot in a server
 * without boosts; past it the API answers 413, error 40005 "Request entity too large".
 */
const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
/** Characters of an attachment's name Countersign keeps (its own cut; the extension is kept). */
const MAX_FILENAME = 100;

/**
 * A name Discord shows and links as it is: letters, digits, dot, dash and underscore only (anything
 * else becomes `_`), no leading dot, and cut from the front so the extension survives.
 */
export function attachmentName(filename: string): string {
  const safe = filename.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '') || 'file';
  return safe.length <= MAX_FILENAME ? safe : safe.slice(safe.length - MAX_FILENAME);
}

/** A message nonce from a tag (a work item's uuid): Discord takes at most 25 characters. */
function nonceOf(tag: string): string {
  return tag.replace(/-/g, '').slice(0, LIMITS.nonceLength);
}

export function createRest(token: string, apiUrl: string | undefined): REST {
  // The stream decides what to do with a 429 (retry with the newest text), not the REST queue.
  return new REST({
    version: '10',
    ...(apiUrl ? { api: apiUrl.replace(/\/v\d+\/?$/, '') } : {}),
    rejectOnRateLimit: () => true,
  }).setToken(token);
}

/**
 * Discord's speaking half: plain REST, usable from any worker process. Every call draws from the
 * per-channel and global buckets shared in Postgres, so many workers together stay inside Discord's
 * limits; model text can never ping anyone.
 */
/** Discord's JSON error code for a user who is not a member of the guild (API v10, "JSON Error Codes"). */
const UNKNOWN_MEMBER = 10007;

/**
 * Servers whose roles a DM's budgets are looked up in, at most (one Get Guild Member each, per
 * turn): a bot in more cannot tell, and a budget that covers a role refuses the DM's calls.
 */
const GUILDS_ASKED_FOR_ROLES = 10;

export class DiscordOutbound implements Outbound {
  readonly platform = 'discord';
  readonly limits = { maxMessageLength: LIMITS.messageContent, minEditIntervalMs: LIMITS.editIntervalMs };
  readonly #rest: REST;
  readonly #buckets: RateBuckets;
  readonly #applicationId: string;

  /** Where DISCORD_API_URL points, when it does (a test's fake): attachments may be served there too. */
  readonly #apiOrigin: string | undefined;

  constructor(rest: REST, buckets: RateBuckets, applicationId: string, apiUrl?: string) {
    this.#rest = rest;
    this.#apiOrigin = apiUrl ? new URL(apiUrl).origin : undefined;
    this.#buckets = buckets;
    this.#applicationId = applicationId;
  }

  /**
   * Takes the per-channel and global tokens of the next call to the target's channel. A wait given up
   * (a reply handed to the outbox) gives back both, the channel's too when it was already taken.
   */
  async reserve(target: ReplyTarget, signal?: AbortSignal, partial?: PartialEdit): Promise<void> {
    await this.#buckets.waitAll(
      [
        { key: channelEditBucketKey(target.channel), bucket: DISCORD_BUCKETS.channelEdit },
        { key: globalBucketKey(this.#applicationId), bucket: DISCORD_BUCKETS.global },
      ],
      signal,
      partial,
    );
  }

  async #send<T>(channel: string, call: () => Promise<T>, reserved = false): Promise<T> {
    if (!reserved) await this.reserve({ platform: 'discord', channel });
    try {
      return await call();
    } catch (error) {
      if (error instanceof RateLimitError) {
        metrics.platformRateLimited.inc({ platform: 'discord', method: error.method });
        throw Object.assign(new Error(`Discord rate limit on ${error.route}`), { retryAfterMs: error.retryAfter });
      }
      metrics.platformErrors.inc({ platform: 'discord' });
      throw error;
    }
  }

  #payload(text: string, options?: ReplyOptions): ApiMessagePayload {
    return {
      content: neutralizeMentions(text),
      embeds: [],
      allowed_mentions: NO_MENTIONS,
      components: options?.buttons?.length ? replyButtonRows(options.buttons) : [],
      flags: MessageFlag.suppressEmbeds,
    };
  }

  post(target: ReplyTarget, text: string, options?: ReplyOptions): Promise<PostedMessage> {
    return this.postPayload(target, this.#payload(text, options));
  }

  /**
   * Posts with a nonce made from `tag` and `enforce_nonce`: Discord then returns the message an
   * earlier attempt created with the same nonce (within a few minutes) instead of creating another,
   * so no lookup is needed and `findEarlier` changes nothing.
   */
  postTagged(target: ReplyTarget, text: string, tag: string): Promise<PostedMessage> {
    return this.postPayload(target, { ...this.#payload(text), nonce: nonceOf(tag), enforce_nonce: true });
  }

  async edit(target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions): Promise<void> {
    const body = this.#payload(text, options);
    await this.#send(
      target.channel,
      () => this.#rest.patch(Routes.channelMessage(target.channel, messageId), { body }),
      options?.reserved === true,
    );
  }

  /** Posts a message built by a renderer of Discord's own UI (components, embeds), as it is. */
  async postPayload(target: ReplyTarget, body: ApiMessagePayload): Promise<PostedMessage> {
    const message = (await this.#send(target.channel, () =>
      this.#rest.post(Routes.channelMessages(target.channel), { body }),
    )) as { id: string };
    return { messageId: message.id };
  }

  /** Replaces a message's payload in place (the counterpart of `postPayload`). */
  async patchPayload(target: ReplyTarget, messageId: string, body: ApiMessagePayload): Promise<void> {
    await this.#send(target.channel, () =>
      this.#rest.patch(Routes.channelMessage(target.channel, messageId), { body }),
    );
  }

  /**
   * Replaces the message an interaction came from (`@original` of a component interaction) through
   * the interaction's webhook, which is not bound to the bot's global rate limit: no bucket is
   * taken. The token is the interaction's, valid for 15 minutes.
   */
  async patchInteractionMessage(interactionToken: string, body: ApiMessagePayload): Promise<void> {
    try {
      await this.#rest.patch(Routes.webhookMessage(this.#applicationId, interactionToken, '@original'), {
        body,
        auth: false,
      });
    } catch (error) {
      if (error instanceof RateLimitError) {
        metrics.platformRateLimited.inc({ platform: 'discord', method: error.method });
      } else metrics.platformErrors.inc({ platform: 'discord' });
      throw error;
    }
  }

  /**
   * Shares a file as a message with one attachment (multipart: `payload_json` and `files[0]`), the
   * comment as its text. A file over Discord's attachment limit is refused here, before its bytes
   * are sent; Discord's own refusals (no access to the channel: 50001) reach the caller as thrown.
   */
  async upload(target: ReplyTarget, file: OutboundFile): Promise<void> {
    if (file.content.length > MAX_ATTACHMENT_BYTES) {
      const mib = (file.content.length / (1024 * 1024)).toFixed(1);
      throw new Error(`${file.filename} is ${mib} MiB; Discord takes attachments of at most 10 MiB`);
    }
    const name = attachmentName(file.filename);
    const body = {
      content: file.comment ? neutralizeMentions(file.comment).slice(0, LIMITS.messageContent) : '',
      allowed_mentions: NO_MENTIONS,
      attachments: [{ id: 0, filename: name }],
      flags: MessageFlag.suppressEmbeds,
    };
    await this.#send(target.channel, () =>
      this.#rest.post(Routes.channelMessages(target.channel), {
        body,
        // A diff is text; saying so keeps Discord from guessing a type from its first bytes. A shared
        // image says its own type, so Discord shows it as one.
        files: [{ name, data: file.content, contentType: file.contentType ?? 'text/plain; charset=utf-8' }],
      }),
    );
  }

  /** An attachment a person sent, from Discord's CDN only (files.ts). */
  async download(file: FileRef, options: { maxBytes: number; signal: AbortSignal }): Promise<Buffer> {
    return downloadAttachment(file, this.#apiOrigin, options);
  }

  /** The bot's DM channel with `user` (created on first use; Discord returns the same one after). */
  async directChannel(user: string): Promise<ReplyTarget> {
    const channel = (await this.#send('dm', () =>
      this.#rest.post(Routes.userChannels(), { body: { recipient_id: user } }),
    )) as { id: string };
    return { platform: 'discord', channel: channel.id };
  }

  /**
   * The person with the roles they have in the guild now (Get Guild Member): the policy's
   * `discord-role:` entries match these. Undefined when they are no longer a member (10007 Unknown
   * Member); throws when Discord could not say. In a DM there are no roles to look up.
   */
  async personNow(person: Requester, place: ReplyTarget): Promise<Requester | undefined> {
    const guild = person.workspace;
    if (!guild || guild === '@me' || guild !== place.workspace) return person;
    // What the platform says now replaces what was told, or not told, then.
    const { groups: _then, groupsUnknown: _unknown, ...now } = person;
    try {
      const member = (await this.#rest.get(Routes.guildMember(guild, person.userId))) as { roles?: string[] };
      const roles = (member.roles ?? []).filter((id) => id !== guild);
      return roles.length ? { ...now, groups: roles } : now;
    } catch (error) {
      if (error instanceof DiscordAPIError && error.code === UNKNOWN_MEMBER) return undefined;
      throw error;
    }
  }

  /**
   * The roles `person` has in every server the bot is in (Get Current User Guilds, then Get Guild
   * Member in each; not a member: none there), for a budget that covers a role when they wrote in a
   * DM. Throws when Discord could not say, or the bot is in more servers than it asks about.
   */
  async groupsAnywhere(person: Requester): Promise<string[]> {
    const guilds = (await this.#rest.get(Routes.userGuilds(), {
      query: new URLSearchParams({ limit: String(GUILDS_ASKED_FOR_ROLES + 1) }),
    })) as Array<{ id: string }>;
    if (guilds.length > GUILDS_ASKED_FOR_ROLES)
      throw new Error(
        `the bot is in more than ${GUILDS_ASKED_FOR_ROLES} servers; roles are looked up in at most that many`,
      );
    const roles = await Promise.all(
      guilds.map(async (guild) => {
        try {
          const member = (await this.#rest.get(Routes.guildMember(guild.id, person.userId))) as { roles?: string[] };
          return (member.roles ?? []).filter((id) => id !== guild.id);
        } catch (error) {
          if (error instanceof DiscordAPIError && error.code === UNKNOWN_MEMBER) return [];
          throw error;
        }
      }),
    );
    return [...new Set(roles.flat())];
  }

  /** Discord's message link: the guild (`@me` for a DM), the channel, the message. */
  async linkTo(target: ReplyTarget, messageId: string): Promise<string> {
    return `https://discord.com/channels/${target.workspace ?? '@me'}/${target.channel}/${messageId}`;
  }

  /** Deletes a message; best effort, outside the rate budget (it cleans up after a failed post). */
  async deleteMessage(target: ReplyTarget, messageId: string): Promise<void> {
    await this.#rest.delete(Routes.channelMessage(target.channel, messageId)).catch(() => undefined);
  }
}
