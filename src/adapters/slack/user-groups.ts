import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { Requester } from '../../core/person.ts';
import { SLACK_RULES } from './rules.ts';
import { slackErrorOf } from './api-errors.ts';

const USER_GROUP_LIMITS = {
  /** How long a workspace's groups are trusted before they are listed again. */
  ttlMs: 5 * 60_000,
  /** A lookup slower than this counts as failed: a message is not held up by it. */
  timeoutMs: 3_000,
} as const;

interface Listing {
  at: number;
  byUser: Map<string, string[]>;
  /** Slack did not answer (an error other than having no user groups): nobody's groups are known. */
  failed: boolean;
}

/**
 * The Slack user groups (S…) each person is in, for policies that name `slack-usergroup:` entries.
 * Slack events do not carry them, so each workspace's groups are listed (usergroups.list with
 * users, scope usergroups:read) at most every few minutes and shared by every lookup. A workspace
 * that refuses (no scope, a free plan without user groups) is remembered as having none for the
 * same time and logged once: people then count as in no group, which only ever denies. A listing
 * that failed otherwise (an error, no answer) leaves their groups unknown (`groupsUnknown`).
 */
export class SlackUserGroups {
  readonly #client: WebClient;
  readonly #log: Logger;
  readonly #ttlMs: number;
  readonly #listings = new Map<string, Listing>();
  readonly #pending = new Map<string, Promise<Listing>>();
  readonly #warned = new Set<string>();
  readonly #namesGroups: () => boolean;

  /** `namesGroups`: whether the policy in force names any Slack user group; where not, none are listed. */
  constructor(client: WebClient, log: Logger, options: { ttlMs?: number; namesGroups?: () => boolean } = {}) {
    this.#client = client;
    this.#log = log;
    this.#ttlMs = options.ttlMs ?? USER_GROUP_LIMITS.ttlMs;
    this.#namesGroups = options.namesGroups ?? (() => true);
  }

  /**
   * A Slack person as a requester: `issuer` is the team that issued their id (another org's for a
   * Slack Connect user), `home` the workspace the bot speaks in. User groups are listed for the home
   * workspace only; an id another org issued is in none of them.
   */
  async personOf(user: string, issuer: string | undefined, home: string | undefined): Promise<Requester> {
    // A policy that names no user group: nobody's groups can change a decision (a free workspace has none to list).
    const groups = issuer && issuer === home && this.#namesGroups() ? await this.groupsOf(issuer, user) : [];
    return {
      platform: SLACK_RULES.name,
      userId: user,
      ...(issuer ? { workspace: issuer } : {}),
      ...(groups?.length ? { groups } : {}),
      // Slack did not list them: a budget that covers a user group looks them up before it lets the turn spend.
      ...(groups ? {} : { groupsUnknown: true }),
    };
  }

  /** The groups of `user` in `team`; undefined when Slack did not list them (no answer, an error). Never throws. */
  async groupsOf(team: string, user: string): Promise<string[] | undefined> {
    const listing = this.#listings.get(team);
    if (listing && Date.now() - listing.at < this.#ttlMs) return answerFrom(listing, user);
    let pending = this.#pending.get(team);
    if (!pending) {
      pending = this.#list(team).finally(() => this.#pending.delete(team));
      this.#pending.set(team, pending);
    }
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), USER_GROUP_LIMITS.timeoutMs);
    });
    const fresh = await Promise.race([pending, timedOut]).finally(() => clearTimeout(timer));
    const known = fresh ?? listing;
    return known ? answerFrom(known, user) : undefined;
  }

  async #list(team: string): Promise<Listing> {
    let byUser = new Map<string, string[]>();
    let failed = false;
    try {
      byUser = await listGroupsByUser(this.#client);
    } catch (error) {
      // A workspace without user groups for the bot has none; any other failure leaves them unknown.
      failed = !NO_GROUPS_HERE.has(slackErrorOf(error) ?? '');
      if (!this.#warned.has(team)) {
        this.#warned.add(team);
        this.#log.warn(
          { team, error: slackErrorOf(error) ?? String(error) },
          'could not list Slack user groups (scope usergroups:read?); slack-usergroup: entries of the policy match nobody in this workspace',
        );
      }
    }
    const listing = { at: Date.now(), byUser, failed };
    this.#listings.set(team, listing);
    return listing;
  }
}

function answerFrom(listing: Listing, user: string): string[] | undefined {
  return listing.failed ? undefined : (listing.byUser.get(user) ?? []);
}

/** Every live user group of the workspace, by member: one `usergroups.list` with its users. */
async function listGroupsByUser(client: WebClient): Promise<Map<string, string[]>> {
  const result = (await client.usergroups.list({ include_users: true })) as {
    usergroups?: Array<{ id?: string; users?: string[]; date_delete?: number }>;
  };
  const byUser = new Map<string, string[]>();
  for (const group of result.usergroups ?? []) {
    if (!group.id || group.date_delete) continue;
    for (const user of group.users ?? []) byUser.set(user, [...(byUser.get(user) ?? []), group.id]);
  }
  return byUser;
}

/**
 * Slack's answers that mean a workspace has no user groups for the bot (no usergroups:read, a plan
 * without them): as for a live message, the person is then in none, which only ever denies.
 */
const NO_GROUPS_HERE = new Set(['missing_scope', 'not_allowed_token_type', 'paid_only', 'paid_teams_only']);

/** How long a fresh listing answers for every scheduled run that asks (usergroups.list is Tier 2). */
const FRESH_FOR_MS = 60_000;

/**
 * The user groups people are in now, for work done in their name while they are away (a scheduled
 * run): listed afresh (usergroups.list with users) at most once a minute for all the runs that ask,
 * so a burst of runs stays within Slack's Tier 2 limit. Unlike SlackUserGroups it never answers from
 * a listing that failed: when Slack does not answer (network, rate limit, server error) it throws,
 * so stale groups are never used instead.
 */
export class CurrentUserGroups {
  readonly #client: WebClient;
  readonly #freshForMs: number;
  #listing: { at: number; byUser: Promise<Map<string, string[]>> } | undefined;

  constructor(client: WebClient, freshForMs: number = FRESH_FOR_MS) {
    this.#client = client;
    this.#freshForMs = freshForMs;
  }

  async groupsOf(user: string): Promise<string[]> {
    if (!this.#listing || Date.now() - this.#listing.at >= this.#freshForMs) {
      const byUser = this.#list();
      this.#listing = { at: Date.now(), byUser };
      // A failed listing is not kept: the next run asks Slack again.
      byUser.catch(() => {
        if (this.#listing?.byUser === byUser) this.#listing = undefined;
      });
    }
    return (await this.#listing.byUser).get(user) ?? [];
  }

  async #list(): Promise<Map<string, string[]>> {
    try {
      return await listGroupsByUser(this.#client);
    } catch (error) {
      if (NO_GROUPS_HERE.has(slackErrorOf(error) ?? '')) return new Map();
      throw error;
    }
  }
}
