import { WebClient } from '@slack/web-api';
import type { DeliveryContext, ReplyDelivery } from '../../reply/delivery.ts';
import type { Outbound, OutboundFile, PersonLookUp, PostedMessage, ReplyOptions } from '../../reply/outbound.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';
import type { PartialEdit, RateBuckets } from '../../reply/rate-bucket.ts';
import { metrics } from '../../metrics.ts';
import { replyBlocks, type Block } from './blocks.ts';
import { fitMrkdwn, markdownToMrkdwn } from './format/index.ts';
import { rateLimitedError } from './api-errors.ts';
import { LIMITS } from './limits.ts';
import { NativeDelivery, type NativeStreaming } from './native-delivery.ts';
import { downloadSlackFile, filesOfMessage } from './files.ts';
import { findTaggedPost, replyMetadata } from './tagged-posts.ts';
import type { FileRef } from '../../core/work-item.ts';
import type { Requester } from '../../core/person.ts';
import { AccountStatus } from './account-status.ts';
import { CurrentUserGroups } from './user-groups.ts';

export function createWebClient(token: string, apiUrl: string | undefined): WebClient {
  // Retries and 429s are the reply stream's business (newest text wins), not the client's.
  return new WebClient(token, {
    ...(apiUrl ? { slackApiUrl: apiUrl } : {}),
    rejectRateLimitedCalls: true,
    retryConfig: { retries: 0 },
  });
}

/**
 * Sent with every post and update: Slack never fetches a link in the bot's text for a preview, so a
 * prompt-injected answer cannot leak a secret through the preview request. chat.postMessage
 * documents both arguments; chat.update does not list them (Slack ignores arguments a method does
 * not know), so they are sent there too in case a URL added by an edit would be unfurled. The
 * streaming methods document neither; see streaming.ts.
 */
const NO_UNFURLS = { unfurl_links: false, unfurl_media: false } as const;

/** Where Slack's response_urls point: commercial Slack and GovSlack. */
const SLACK_HOOK_ORIGINS = ['https://hooks.slack.com', 'https://hooks.slack-gov.com'];

/** Hosts Slack's upload URLs (files.getUploadURLExternal) are on: files.slack.com and the like. */
const SLACK_UPLOAD_HOST = /(^|\.)slack(-gov)?\.com$/;

/** How long the bytes of one file may take to reach Slack's upload URL (Countersign's). */
const UPLOAD_TIMEOUT_MS = 60_000;

/**
 * Slack's speaking half: Web API calls any worker process can make. Edits draw from a
 * per-workspace budget shared in Postgres (chat.update is Tier 3, ~50/min per workspace), so every
 * conversation and every worker together stay inside it.
 */
export class SlackOutbound implements Outbound {
  readonly platform = 'slack';
  // A message continues in the next one before a section fills up, leaving room for mrkdwn escaping.
  readonly limits = { maxMessageLength: LIMITS.replyMessageText, minEditIntervalMs: LIMITS.editIntervalMs };
  readonly #streaming: NativeStreaming | undefined;
  readonly #client: WebClient;
  readonly #currentGroups: CurrentUserGroups;
  readonly #accounts: AccountStatus;
  readonly #buckets: RateBuckets;
  readonly #perMinute: number;
  #botId: Promise<string> | undefined;

  /** `groupsFreshForMs`: how long one user group listing answers scheduled runs (default a minute). */
  constructor(
    client: WebClient,
    buckets: RateBuckets,
    updatesPerMinute: number,
    streaming?: NativeStreaming,
    options: { groupsFreshForMs?: number } = {},
  ) {
    this.#client = client;
    this.#currentGroups = new CurrentUserGroups(client, options.groupsFreshForMs);
    this.#accounts = new AccountStatus(client);
    this.#buckets = buckets;
    this.#perMinute = updatesPerMinute;
    this.#streaming = streaming;
  }

  /** Native streaming where it is enabled (SLACK_STREAMING=auto); otherwise replies are edited in place. */
  createDelivery(context: DeliveryContext): ReplyDelivery | undefined {
    return this.#streaming && new NativeDelivery(this.#streaming, this, context);
  }

  /** chat.update is the call streaming makes often; its Tier 3 budget is per workspace. */
  async reserve(target: ReplyTarget, signal?: AbortSignal, partial?: PartialEdit): Promise<void> {
    // Burst plus a minute of refill stays within the budget for any 60-second window.
    const capacity = Math.max(1, Math.floor(this.#perMinute / LIMITS.chatUpdateBurstDivisor));
    await this.#buckets.wait(
      `slack:${target.workspace ?? 'default'}:chat.update`,
      {
        capacity,
        refillPerSecond: Math.max(this.#perMinute - capacity, 1) / 60,
      },
      signal,
      partial,
    );
  }

  async #call<T>(target: ReplyTarget, method: string, call: () => Promise<T>, reserved = false): Promise<T> {
    if (method === 'chat.update' && !reserved) await this.reserve(target);
    try {
      return await call();
    } catch (error) {
      const limited = rateLimitedError(error, method);
      if (limited) throw limited;
      metrics.platformErrors.inc({ platform: 'slack' });
      throw error;
    }
  }

  async post(target: ReplyTarget, text: string, options?: ReplyOptions, tag?: string): Promise<PostedMessage> {
    const result = await this.#call(target, 'chat.postMessage', () =>
      this.#client.chat.postMessage({
        channel: target.channel,
        ...(target.thread ? { thread_ts: target.thread } : {}),
        text: fitMrkdwn(text, LIMITS.sectionText),
        blocks: replyBlocks(text, options?.buttons),
        ...(tag ? { metadata: replyMetadata(tag) } : {}),
        ...NO_UNFURLS,
      }),
    );
    return { messageId: String(result.ts) };
  }

  /**
   * Posts with the work item's metadata; on a later attempt, first looks for the message an earlier
   * one posted (see tagged-posts.ts), so a worker killed before recording it leaves no stray message.
   */
  async postTagged(target: ReplyTarget, text: string, tag: string, findEarlier: boolean): Promise<PostedMessage> {
    if (findEarlier) {
      const found = await findTaggedPost(this.#client, target, tag, await this.#ownBotId());
      if (found) return { messageId: found };
    }
    return this.post(target, text, undefined, tag);
  }

  /** The app's bot id (auth.test), which marks the messages it posted; asked once. */
  #ownBotId(): Promise<string> {
    this.#botId ??= this.#client.auth.test().then(
      (auth) => String(auth.bot_id),
      (error: unknown) => {
        this.#botId = undefined;
        throw error;
      },
    );
    return this.#botId;
  }

  async edit(target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions): Promise<void> {
    await this.#call(
      target,
      'chat.update',
      () =>
        this.#client.chat.update({
          channel: target.channel,
          ts: messageId,
          text: fitMrkdwn(text, LIMITS.sectionText),
          blocks: replyBlocks(text, options?.buttons),
          ...NO_UNFURLS,
        }),
      options?.reserved,
    );
  }

  /**
   * Posts a message built of Block Kit blocks (with `text` as its notification and fallback), or
   * with `messageId` replaces one in place. Renderers of Slack's own UI (cards.ts) send through it.
   */
  async postBlocks(target: ReplyTarget, text: string, blocks: Block[], messageId?: string): Promise<PostedMessage> {
    if (messageId) {
      await this.#call(target, 'chat.update', () =>
        this.#client.chat.update({ channel: target.channel, ts: messageId, text, blocks, ...NO_UNFURLS }),
      );
      return { messageId };
    }
    const result = await this.#call(target, 'chat.postMessage', () =>
      this.#client.chat.postMessage({
        channel: target.channel,
        ...(target.thread ? { thread_ts: target.thread } : {}),
        text,
        blocks,
        ...NO_UNFURLS,
      }),
    );
    return { messageId: String(result.ts) };
  }

  /**
   * Replaces the message a click came from through the click's response_url (five uses within 30
   * minutes), which spends nothing of the chat.update budget. The URL arrives in the payload, so it
   * is only ever posted to on Slack's hooks hosts (or the host this client's API calls go to: a
   * test's fake); the URL itself is never logged.
   */
  async replaceClicked(responseUrl: string, message: { text: string; blocks: Block[] }): Promise<void> {
    const url = new URL(responseUrl);
    if (!SLACK_HOOK_ORIGINS.includes(url.origin) && url.origin !== new URL(this.#client.slackApiUrl).origin)
      throw new Error(`a response_url on ${url.host} is not Slack's`);
    const answer = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ replace_original: true, text: message.text, blocks: message.blocks, ...NO_UNFURLS }),
      signal: AbortSignal.timeout(LIMITS.responseUrlTimeoutMs),
    });
    if (!answer.ok) throw new Error(`response_url answered ${answer.status} ${(await answer.text()).slice(0, 80)}`);
  }

  /**
   * Shares a file in the target's conversation the way Slack asks for it: files.getUploadURLExternal
   * (name and exact length), the bytes POSTed to the URL it gives, then files.completeUploadExternal
   * into the channel and thread with the comment. Needs the `files:write` scope; Slack's refusals
   * (`not_in_channel`, `missing_scope`) reach the caller as thrown.
   */
  async upload(target: ReplyTarget, file: OutboundFile): Promise<void> {
    const ticket = await this.#call(target, 'files.getUploadURLExternal', () =>
      this.#client.files.getUploadURLExternal({ filename: file.filename, length: file.content.length }),
    );
    if (!ticket.upload_url || !ticket.file_id) throw new Error('files.getUploadURLExternal gave no upload URL');
    await this.#sendBytes(ticket.upload_url, file.content);
    await this.#call(target, 'files.completeUploadExternal', () =>
      this.#client.files.completeUploadExternal({
        files: [{ id: ticket.file_id!, title: file.filename }],
        channel_id: target.channel,
        ...(target.thread ? { thread_ts: target.thread } : {}),
        ...(file.comment ? { initial_comment: markdownToMrkdwn(file.comment) } : {}),
      }),
    );
  }

  /** A file a person shared, from Slack's file hosts only, with the bot token only there (files.ts). */
  async download(file: FileRef, options: { maxBytes: number; signal: AbortSignal }): Promise<Buffer> {
    return downloadSlackFile(file, this.#client.token ?? '', new URL(this.#client.slackApiUrl).origin, options);
  }

  /** The files of a mention's own message, which its app_mention event does not carry (files.ts). */
  async messageFiles(target: ReplyTarget, messageId: string): Promise<FileRef[]> {
    const method = target.thread && target.thread !== messageId ? 'conversations.replies' : 'conversations.history';
    return this.#call(target, method, () =>
      filesOfMessage(this.#client.conversations, target.channel, target.thread, messageId),
    );
  }

  /**
   * POSTs a file's bytes to its upload URL. The URL is pre-signed, so no token goes with it; it
   * must be on Slack's own hosts over https (or where this client's API calls go: a test's fake).
   */
  async #sendBytes(uploadUrl: string, content: Buffer): Promise<void> {
    const url = new URL(uploadUrl);
    const slacks = url.protocol === 'https:' && SLACK_UPLOAD_HOST.test(url.hostname);
    if (!slacks && url.origin !== new URL(this.#client.slackApiUrl).origin)
      throw new Error(`an upload URL on ${url.host} is not Slack's`);
    const answer = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Uint8Array(content),
      signal: AbortSignal.timeout(UPLOAD_TIMEOUT_MS),
    });
    if (!answer.ok) {
      metrics.platformErrors.inc({ platform: 'slack' });
      throw new Error(`Slack's upload URL answered ${answer.status} ${(await answer.text()).slice(0, 80)}`);
    }
  }

  /** The app's DM with `user` (conversations.open, scope im:write), where approval cards can be sent. */
  async directChannel(user: string, workspace?: string): Promise<ReplyTarget> {
    const opened = await this.#call({ platform: 'slack', channel: user }, 'conversations.open', () =>
      this.#client.conversations.open({ users: user }),
    );
    const channel = opened.channel?.id;
    if (!channel) throw new Error(`conversations.open gave no channel for ${user}`);
    return { platform: 'slack', channel, ...(workspace ? { workspace } : {}) };
  }

  /** The message's permalink (chat.getPermalink), or undefined when Slack would not give one. */
  async linkTo(target: ReplyTarget, messageId: string): Promise<string | undefined> {
    try {
      const result = await this.#client.chat.getPermalink({ channel: target.channel, message_ts: messageId });
      return result.permalink;
    } catch {
      return undefined;
    }
  }

  /**
   * The person with the user groups Slack lists now (user-groups.ts): groups are the home
   * workspace's, so an id another org issued is in none. Throws when Slack could not say.
   */
  async personNow(person: Requester, place: ReplyTarget, lookUp: PersonLookUp = {}): Promise<Requester | undefined> {
    // What the platform says now replaces what was told, or not told, then.
    const { groups: _then, groupsUnknown: _unknown, ...now } = person;
    if (!person.workspace || person.workspace !== place.workspace) return now;
    // A deactivated owner is no longer a member (only with users:read; see AccountStatus).
    if (await this.#accounts.isDeactivated(person.userId)) return undefined;
    // A policy that names no user group: nobody's groups can change a decision, so none are listed.
    if (lookUp.groups === false) return now;
    const groups = await this.#currentGroups.groupsOf(person.userId);
    return groups.length ? { ...now, groups } : now;
  }

  /** Deletes a message; best effort (it cleans up after a card that could not be posted whole). */
  async deleteMessage(target: ReplyTarget, messageId: string): Promise<void> {
    await this.#client.chat.delete({ channel: target.channel, ts: messageId }).catch(() => undefined);
  }

  /** Opens a modal for the person whose click gave `triggerId` (valid for 3 seconds). */
  async openModal(triggerId: string, view: Record<string, unknown>): Promise<void> {
    await this.#call({ platform: 'slack', channel: 'views' }, 'views.open', () =>
      this.#client.views.open({ trigger_id: triggerId, view: view as never }),
    );
  }

  /** A message only `user` sees (rejected clicks, errors of a command). */
  async ephemeral(channel: string, user: string, text: string, thread?: string): Promise<void> {
    await this.#client.chat.postEphemeral({
      channel,
      user,
      text: markdownToMrkdwn(text),
      ...(thread ? { thread_ts: thread } : {}),
    });
  }
}
