import { REST, RateLimitError, Routes } from 'discord.js';
import type { Pool } from '../../db/pool.ts';
import { cardButtons, cardText } from '../../approval/card.ts';
import { type ApprovalCard } from '../../core/approval-card.ts';
import type { Outbound, PostedMessage, ReplyOptions } from '../../reply/outbound.ts';
import type { ReplyTarget } from '../../core/reply-target.ts';
import { metrics } from '../../metrics.ts';
import {
  approvalCard,
  decidedApprovalCard,
  expiredApprovalCard,
  MessageFlag,
  NO_MENTIONS,
  refusedApprovalCard,
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
  /**
   * What this process last sent to each card message. A click on a card of several messages changes
   * one of them; patching only that one keeps a decision from spending the channel's 5 edits per
   * 5 seconds on unchanged messages. Another process's client starts empty and patches them all.
   */
  readonly #cardSent = new Map<string, string>();

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
      flags: MessageFlag.suppressEmbeds,
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

  /**
   * Shows a card as one or more messages (see `callPages`). The card's message id is the ids of its
   * messages joined by commas (Discord ids are digits), so an update patches every one of them.
   */
  async showApprovalCard(target: ReplyTarget, card: ApprovalCard, messageId?: string): Promise<PostedMessage> {
    const pages = renderCard(card);
    if (messageId) {
      const ids = messageId.split(CARD_ID_SEPARATOR);
      for (const [i, body] of pages.entries()) {
        const id = ids[i];
        // The layout depends only on the number of calls, so a card never gains a message.
        if (!id) break;
        const json = JSON.stringify(body);
        if (this.#cardSent.get(id) === json) continue;
        await this.#send(target.channel, () => this.#rest.patch(Routes.channelMessage(target.channel, id), { body }));
        this.#remember(id, json);
      }
      return { messageId };
    }
    const posted: string[] = [];
    try {
      // In order, so Approve all / Deny all (on the last message) appear only after every call.
      for (const body of pages) {
        const message = (await this.#send(target.channel, () =>
          this.#rest.post(Routes.channelMessages(target.channel), { body }),
        )) as { id: string };
        posted.push(message.id);
        this.#remember(message.id, JSON.stringify(body));
      }
    } catch (error) {
      // The show-card job posts the whole card again; no half card with live buttons is left behind.
      for (const id of posted) {
        await this.#rest.delete(Routes.channelMessage(target.channel, id)).catch(() => undefined);
      }
      throw error;
    }
    return { messageId: posted.join(CARD_ID_SEPARATOR) };
  }

  #remember(messageId: string, json: string): void {
    this.#cardSent.delete(messageId);
    this.#cardSent.set(messageId, json);
    if (this.#cardSent.size > CARD_MEMORY) this.#cardSent.delete(this.#cardSent.keys().next().value!);
  }
}

const CARD_ID_SEPARATOR = ',';
/** Card messages whose last payload a process remembers; the oldest is forgotten first. */
const CARD_MEMORY = 1000;

/**
 * The approval card in Discord's components, one payload per message; button custom_ids are the
 * neutral `nonce.decision` values. Cards with calls keep their rich embed, so they cannot carry
 * SUPPRESS_EMBEDS (it hides that embed too); their `content` has its links wrapped instead.
 */
export function renderCard(card: ApprovalCard): ApiMessagePayload[] {
  if (card.kind === 'question') {
    return [
      {
        content: neutralizeMentions(cardText(card)).slice(0, LIMITS.messageContent),
        embeds: [],
        allowed_mentions: NO_MENTIONS,
        components: replyButtonRows(cardButtons(card)),
        flags: MessageFlag.suppressEmbeds,
      },
    ];
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
  const outcomes = (card.decisions ?? []).map((d) => ({
    index: d.index,
    decision: d.approved ? ('approve' as const) : ('deny' as const),
  }));
  if (card.state === 'expired') return expiredApprovalCard(input);
  if (card.state === 'refused') return refusedApprovalCard(input);
  if (card.state === 'decided') {
    const by = [...new Set((card.decisions ?? []).map((d) => d.by))].join(', ');
    return decidedApprovalCard(input, outcomes, by);
  }
  return approvalCard(input, outcomes);
}
