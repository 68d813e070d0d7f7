import { REST, RateLimitError, Routes } from 'discord.js';
import type { Pool } from '../../db/pool.ts';
import { cardButtons, cardText, type ApprovalCard } from '../../approval/card.ts';
import type { Outbound, PostedMessage, ReplyOptions, ReplyTarget } from '../../reply/outbound.ts';
import { metrics } from '../../metrics.ts';
import {
  approvalCard,
  decidedApprovalCard,
  expiredApprovalCard,
  NO_MENTIONS,
  replyButtonRows,
  type ApiMessagePayload,
  type ApprovalCardInput,
} from './components/index.ts';
import { neutralizeMentions } from './format/index.ts';
import { LIMITS } from './limits.ts';
import { channelEditBucketKey, DISCORD_BUCKETS, globalBucketKey, waitForToken } from './rate-limits.ts';

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
export class DiscordOutbound implements Outbound {
  readonly platform = 'discord';
  readonly limits = { maxMessageLength: LIMITS.messageContent, minEditIntervalMs: 1000 };
  readonly #rest: REST;
  readonly #pool: Pool;
  readonly #applicationId: string;

  constructor(rest: REST, pool: Pool, applicationId: string) {
    this.#rest = rest;
    this.#pool = pool;
    this.#applicationId = applicationId;
  }

  /** Takes the per-channel and global tokens of the next call to the target's channel. */
  async reserve(target: ReplyTarget): Promise<void> {
    await waitForToken(this.#pool, channelEditBucketKey(target.channel), DISCORD_BUCKETS.channelEdit);
    await waitForToken(this.#pool, globalBucketKey(this.#applicationId), DISCORD_BUCKETS.global);
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
    };
  }

  async post(target: ReplyTarget, text: string, options?: ReplyOptions): Promise<PostedMessage> {
    const body = this.#payload(text, options);
    const message = (await this.#send(target.channel, () =>
      this.#rest.post(Routes.channelMessages(target.channel), { body }),
    )) as { id: string };
    return { messageId: message.id };
  }

  async edit(target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions): Promise<void> {
    const body = this.#payload(text, options);
    await this.#send(
      target.channel,
      () => this.#rest.patch(Routes.channelMessage(target.channel, messageId), { body }),
      options?.reserved === true,
    );
  }

  async showApprovalCard(target: ReplyTarget, card: ApprovalCard, messageId?: string): Promise<PostedMessage> {
    const body = renderCard(card);
    if (messageId) {
      await this.#send(target.channel, () =>
        this.#rest.patch(Routes.channelMessage(target.channel, messageId), { body }),
      );
      return { messageId };
    }
    const message = (await this.#send(target.channel, () =>
      this.#rest.post(Routes.channelMessages(target.channel), { body }),
    )) as { id: string };
    return { messageId: message.id };
  }
}

/** The approval card in Discord's components; button custom_ids are the neutral `nonce.decision` values. */
export function renderCard(card: ApprovalCard): ApiMessagePayload {
  if (card.kind === 'question' || card.state === 'refused') {
    return {
      content: neutralizeMentions(cardText(card)).slice(0, LIMITS.messageContent),
      embeds: [],
      allowed_mentions: NO_MENTIONS,
      components: replyButtonRows(cardButtons(card)),
    };
  }
  const input: ApprovalCardInput = {
    nonce: card.nonce,
    calls: card.calls.map((c) => ({
      index: c.index,
      tool: c.tool,
      argsPretty: c.argsPretty,
      risk: c.risk,
      ...(c.detail ? { detail: c.detail } : {}),
    })),
    planHashPrefix: card.planHashPrefix,
    expiresAt: card.expiresAt,
    requesterLabel: card.requesterLabel,
  };
  if (card.state === 'expired') return expiredApprovalCard(input);
  if (card.state === 'decided') {
    const by = [...new Set((card.decisions ?? []).map((d) => d.by))].join(', ');
    return decidedApprovalCard(
      input,
      (card.decisions ?? []).map((d) => ({ index: d.index, decision: d.approved ? 'approve' : 'deny' })),
      by,
    );
  }
  const payload = approvalCard(input);
  return { ...payload, components: replyButtonRows(cardButtons(card)) };
}
