import { z } from 'zod';
import { canonicalJson } from './canonical-json.ts';
import {
  grantPatternMatches,
  narrowestGrantPattern,
  type Decision,
  type RuleRef,
  type Where,
} from '../policy/index.ts';
import { makeVisible } from './card.ts';
import type { Requester } from '../core/person.ts';

/**
 * Standing grants ("Always allow here"): what one covers, and whether it covers a call. Pure: the
 * table lives in grant-store.ts, the verbs (create at a click, use in the loop, revoke) in service.ts.
 *
 * A grant is one tool, its arguments — each exactly as called, or widened to the narrowest pattern
 * the policy's rule offers for that argument — and one place: the channel (a Discord thread counts
 * as its parent channel, so the next conversation there is covered too) or the DM it was asked in.
 * A private thread is its own place: its parent's other members cannot see it, so a grant made in
 * it neither covers their calls nor is listed to them. A grant of the parent channel still applies
 * inside it (whoever is in the thread can see the channel the grant names).
 */

/** One argument of a grant: the value exactly, or a pattern from the policy (grant-patterns.ts). */
export const GrantArg = z.union([z.strictObject({ glob: z.string().min(1) }), z.strictObject({ eq: z.unknown() })]);
export type GrantArg = z.infer<typeof GrantArg>;

export const GrantPlace = z.object({
  platform: z.string().min(1),
  /** Slack team or Discord guild; '' in DMs without one. */
  workspace: z.string(),
  channel: z.string().min(1),
  dm: z.boolean(),
});
export type GrantPlace = z.infer<typeof GrantPlace>;

/** What "Always allow here" on a card would create: stored with the call, so the click grants what the card said. */
export const GrantOffer = z.object({
  tool: z.string().min(1),
  args: z.record(z.string(), GrantArg),
  place: GrantPlace,
  ttlSeconds: z.number().int().positive(),
  /** The card's sentence saying exactly what the grant covers. */
  covers: z.string(),
});
export type GrantOffer = z.infer<typeof GrantOffer>;

/** A grant as stored (countersign.grants). */
export interface Grant {
  id: string;
  tool: string;
  args: Record<string, GrantArg>;
  place: GrantPlace;
  covers: string;
  rule: string;
  createdBy: Requester;
  createdAt: Date;
  expiresAt: Date;
  revokedAt?: Date;
  uses: number;
}

/** The place a call is asked in, as grants name it: where a grant made here applies. */
function placeOf(where: Where): GrantPlace {
  return {
    platform: where.platform,
    workspace: where.workspace ?? '',
    channel: (where.privateThread ? where.channel : where.parentChannel) ?? where.channel ?? '',
    dm: where.dm,
  };
}

/** The places whose grants apply to a call asked here: its own, and in a private thread its parent's too. */
export function placesCovering(where: Where): GrantPlace[] {
  const own = placeOf(where);
  if (!where.privateThread || !where.parentChannel || where.parentChannel === own.channel) return [own];
  return [own, { ...own, channel: where.parentChannel }];
}

const samePlace = (a: GrantPlace, b: GrantPlace) =>
  a.platform === b.platform && a.workspace === b.workspace && a.channel === b.channel && a.dm === b.dm;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function formatDuration(seconds: number): string {
  const days = seconds / 86_400;
  if (Number.isInteger(days)) return `${days} day${days === 1 ? '' : 's'}`;
  const hours = seconds / 3600;
  if (Number.isInteger(hours)) return `${hours} hour${hours === 1 ? '' : 's'}`;
  const minutes = Math.round(seconds / 60);
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}

/** What the grant's arguments say, e.g. "command matching `tail -n * logs/**`, the other arguments exactly as shown". */
export function describeArgs(args: Record<string, GrantArg>): string {
  const widened = Object.entries(args).filter((e): e is [string, { glob: string }] => 'glob' in e[1]);
  if (widened.length === 0) return 'exactly these arguments';
  const patterns = widened.map(([arg, a]) => `${makeVisible(arg)} matching \`${makeVisible(a.glob)}\``).join(', ');
  const exact = Object.keys(args).length > widened.length ? ', the other arguments exactly as shown' : '';
  return `${patterns}${exact}`;
}

function describePlace(place: GrantPlace, where: Where): string {
  if (place.dm) return 'in this direct message';
  if (where.privateThread) return `in this private thread only (${place.platform} channel ${place.channel})`;
  return `in the channel this was asked in (${place.platform} channel ${place.channel})`;
}

/**
 * The grant an approval of this call could become, or undefined when the policy does not let it
 * (a rule that is not grantable, a call whose arguments are not an object, grants switched off).
 */
export function grantOffer(
  call: { name: string; args: unknown },
  decision: Decision,
  where: Where,
  ttlSeconds: number,
): GrantOffer | undefined {
  if (ttlSeconds <= 0 || !decision.grantable) return undefined;
  if (decision.outcome !== 'ask' && decision.outcome !== 'countersign') return undefined;
  if (!isRecord(call.args)) return undefined;
  const place = placeOf(where);
  if (!place.channel) return undefined;
  const args: Record<string, GrantArg> = {};
  for (const [key, value] of Object.entries(call.args)) {
    const glob = narrowestGrantPattern(key, decision.grantPatterns?.[key] ?? [], value);
    args[key] = glob !== undefined ? { glob } : { eq: value };
  }
  const covers =
    `Always allow here: later \`${makeVisible(call.name)}\` calls with ${describeArgs(args)} ` +
    `run without a card ${describePlace(place, where)}, for anyone, for ${formatDuration(ttlSeconds)} or until revoked.`;
  return { tool: call.name, args, place, ttlSeconds, covers };
}

/** Whether a grant's tool, arguments and place cover this call: every argument, no more and no fewer. */
export function grantCovers(
  grant: Pick<Grant, 'tool' | 'args' | 'place'>,
  call: { name: string; args: unknown },
  where: Where,
): boolean {
  if (grant.tool !== call.name || !isRecord(call.args)) return false;
  if (!placesCovering(where).some((place) => samePlace(grant.place, place))) return false;
  const keys = Object.keys(call.args);
  if (keys.length !== Object.keys(grant.args).length) return false;
  return keys.every((key) => {
    const want = grant.args[key];
    if (!want) return false;
    const value = call.args as Record<string, unknown>;
    return 'glob' in want
      ? grantPatternMatches(key, want.glob, value[key])
      : canonicalJson(want.eq) === canonicalJson(value[key]);
  });
}

/** A rule as grants record it: `name, source` (`kubectl-read, policy.yaml:27`). */
export function ruleName(rule: RuleRef): string {
  return `${rule.name}, ${rule.source}`;
}

/**
 * Whether a recorded rule is this rule: the same name from the same file. The line is left out, so
 * an edit elsewhere in the policy file does not end every grant; a rule renamed or moved to another
 * file is another rule.
 */
function sameRule(recorded: string, rule: RuleRef): boolean {
  const withoutLine = (text: string) => text.replace(/:\d+$/, '');
  return withoutLine(recorded) === withoutLine(ruleName(rule));
}

/**
 * Whether the policy in force still lets this grant stand for a call it decided as `decision`: the
 * rule must be grantable, and each widened argument's pattern must still be one the rule offers.
 * A grant made under a policy that no longer allows it stops applying.
 */
export function policyStillAllows(grant: Pick<Grant, 'args' | 'rule'>, decision: Decision): boolean {
  if (!decision.grantable || (decision.outcome !== 'ask' && decision.outcome !== 'countersign')) return false;
  // The rule deciding the call now must be the one that offered the grant: a grant made under an
  // `ask` rule for one group never stands in for another person's `countersign` rule.
  if (!sameRule(grant.rule, decision.rule)) return false;
  return Object.entries(grant.args).every(
    ([key, a]) => !('glob' in a) || (decision.grantPatterns?.[key] ?? []).includes(a.glob),
  );
}
