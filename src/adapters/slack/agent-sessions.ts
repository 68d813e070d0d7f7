import { threadOfConversation } from './conversation-ids.ts';
import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { ReplyTarget } from '../../core/reply-target.ts';
import type { TurnEvents } from '../../queue/turn-events.ts';
import { slackErrorOf } from './api-errors.ts';
import { LIMITS } from './limits.ts';

export type SessionStatus = 'processing' | 'suspended' | 'active' | 'closed';

/** What Slack records when a session is created (ignored for one that exists). */
export interface SessionOpening {
  title?: string | undefined;
  initiator?: string;
}

/**
 * Errors that mean this workspace (or this app) has no agent sessions: the app is not declared as an
 * agent, lacks a scope, or the method does not exist there (GovSlack, an older Enterprise Grid).
 * They are remembered per workspace instead of being tried, and warned about, on every turn.
 */
const UNAVAILABLE = new Set([
  'not_authorized',
  'not_allowed_token_type',
  'missing_scope',
  'unknown_method',
  'method_not_supported_for_channel_type',
  'feature_not_enabled',
  'team_access_not_granted',
]);

/** A session title: the first line of the person's request, cut to Slack's limit. */
function sessionTitle(prompt: string | undefined): string | undefined {
  const line = (prompt ?? '')
    .split('\n')
    .find((l) => l.trim())
    ?.trim();
  if (!line) return undefined;
  return line.length <= LIMITS.sessionTitle ? line : `${line.slice(0, LIMITS.sessionTitle - 1)}…`;
}

/**
 * A title worth replacing: a greeting or a bare word ("hi", "help", "hey there") says nothing about
 * the conversation, so the first request with substance renames the session.
 */
export function isPlaceholderTitle(title: string | undefined): boolean {
  return !title || title.split(/\s+/).filter(Boolean).length < 3;
}

/** How many threads' titles are remembered for renaming (oldest forgotten first). */
const TITLES_REMEMBERED = 5000;

/**
 * Slack's agent sessions for the turns this process runs: `processing` while a turn works (which
 * creates the session, titled from the request, and shows Slack's native Stop), `suspended` while a
 * card waits for a person, `active` when the answer is done — and also when a turn failed or was
 * stopped, since Slack never moves a session away from `processing` by itself.
 *
 * A session lives in a thread, so only replies in a thread get one. Calls for one thread are made in
 * order; a failure never touches the turn (the session is decoration on the reply, not the reply).
 * A session whose title was a greeting is renamed by the first request with substance, and a
 * conversation that expires (housekeeping deleted it) is `closed`.
 */
export class SlackAgentSessions {
  readonly #client: WebClient;
  readonly #log: Logger;
  readonly #fallbackMs: number;
  readonly #now: () => number;
  /** Workspace → until when (ms) sessions are not tried there. */
  readonly #unavailable = new Map<string, number>();
  readonly #warned = new Set<string>();
  /** Per thread, the last call: the next one waits for it, so statuses arrive in order. */
  readonly #chains = new Map<string, Promise<void>>();
  /** Per thread, the session's title as far as this process knows it (what Slack answered or was sent). */
  readonly #titles = new Map<string, string>();

  constructor(client: WebClient, log: Logger, options: { fallbackMs: number; now?: () => number }) {
    this.#client = client;
    this.#log = log;
    this.#fallbackMs = options.fallbackMs;
    this.#now = options.now ?? Date.now;
  }

  observe(events: TurnEvents): void {
    // Title and initiator only count when Slack creates the session; a continuation has no prompt.
    events.on('started', ({ item }) =>
      this.set(item.reply, 'processing', {
        title: sessionTitle(item.input.prompt),
        ...(item.requester.platform === 'slack' ? { initiator: item.requester.userId } : {}),
      }),
    );
    events.on('awaitingApproval', ({ item }) => this.set(item.reply, 'suspended'));
    events.on('finished', ({ item }) => this.set(item.reply, 'active'));
    events.on('failed', ({ item }) => this.set(item.reply, 'active'));
    events.on('cancelled', ({ item }) => this.set(item.reply, 'active'));
    events.on('conversationsExpired', ({ ids }) => {
      for (const id of ids) {
        const thread = threadOfConversation(id);
        if (thread) void this.set(thread, 'closed');
      }
    });
  }

  /** Sets the session of `reply`'s thread; resolves once the call is done (or skipped). */
  set(reply: ReplyTarget, status: SessionStatus, opening: SessionOpening = {}): Promise<void> {
    if (reply.platform !== 'slack' || !reply.thread) return Promise.resolve();
    const key = `${reply.channel}:${reply.thread}`;
    const previous = this.#chains.get(key) ?? Promise.resolve();
    const next = previous.then(async () => {
      const title = await this.#call(reply, status, opening);
      if (status === 'processing' && opening.title) await this.#renameIfBetter(reply, key, title, opening.title);
      if (status === 'closed') this.#titles.delete(key);
    });
    this.#chains.set(key, next);
    void next.finally(() => {
      if (this.#chains.get(key) === next) this.#chains.delete(key);
    });
    return next;
  }

  /** Whether sessions are being skipped in this workspace (after a refusal), for tests and metrics. */
  skipping(team: string): boolean {
    return (this.#unavailable.get(team) ?? 0) > this.#now();
  }

  /** Sets the status; returns the session's title when Slack says it, undefined when the call failed or was skipped. */
  async #call(reply: ReplyTarget, status: SessionStatus, opening: SessionOpening): Promise<string | undefined> {
    const team = reply.workspace ?? '';
    if (this.skipping(team)) return undefined;
    try {
      const result = (await this.#client.apiCall('agents.sessions.setStatus', {
        channel_id: reply.channel,
        thread_ts: reply.thread,
        status,
        ...(opening.title ? { title: opening.title } : {}),
        ...(opening.initiator ? { initiator_user_id: opening.initiator } : {}),
      })) as { warning?: string; title?: string };
      if (result.warning && !this.#warned.has(`${team}:${result.warning}`)) {
        this.#warned.add(`${team}:${result.warning}`);
        this.#log.warn({ team, warning: result.warning }, 'Slack warned about agent sessions (logged once)');
      }
      // Slack answers with the session's title; without it, a created session has the title sent.
      return result.title ?? opening.title ?? '';
    } catch (error) {
      this.#refused(team, error, status);
      return undefined;
    }
  }

  /**
   * A session titled from a greeting takes the first request with substance as its title. What the
   * title is comes from Slack's answer (so another process's session counts); a thread whose title
   * this process never learnt is left alone.
   */
  async #renameIfBetter(
    reply: ReplyTarget,
    key: string,
    current: string | undefined,
    candidate: string,
  ): Promise<void> {
    if (current === undefined) return;
    const known = this.#titles.get(key) ?? current;
    if (!isPlaceholderTitle(known) || isPlaceholderTitle(candidate) || known === candidate) {
      this.#remember(key, known || candidate);
      return;
    }
    try {
      await this.#client.apiCall('agents.sessions.rename', {
        channel_id: reply.channel,
        thread_ts: reply.thread,
        title: candidate,
      });
      this.#remember(key, candidate);
    } catch (error) {
      this.#refused(reply.workspace ?? '', error, 'rename');
    }
  }

  #remember(key: string, title: string): void {
    this.#titles.delete(key);
    this.#titles.set(key, title);
    if (this.#titles.size > TITLES_REMEMBERED) this.#titles.delete(this.#titles.keys().next().value!);
  }

  #refused(team: string, error: unknown, what: string): void {
    const code = slackErrorOf(error);
    if (code && UNAVAILABLE.has(code)) {
      this.#unavailable.set(team, this.#now() + this.#fallbackMs);
      this.#log.warn(
        { team, error: code, retryInMinutes: Math.round(this.#fallbackMs / 60_000) },
        'Slack agent sessions are not available in this workspace; replies go on without them',
      );
      return;
    }
    this.#log.debug({ err: error, team, what }, 'could not update the Slack agent session');
  }
}
