import { z } from 'zod';

/**
 * The one format of button values, read and written only here. A button carries no state of its
 * own, just what its click means:
 *   `<nonce>.<decision>`  an approval card's button (nonce: 32 URL-safe base64 characters, never a dot)
 *   `stop:<work item id>` the Stop button of a running turn
 *   `budget-allow:<offer id>` an allowance offered under a budget refusal
 *   `schedule:<pause|resume|delete|history>:<schedule id>` a schedule's buttons in `/countersign schedules`
 * Both fit Discord's 100-character custom_id, Slack's button value and a console line.
 */

/** An approval envelope's nonce: 24 random bytes as base64url. */
export const NONCE_PATTERN = /^[A-Za-z0-9_-]{32}$/;

const DecisionCode = z.union([
  z.literal('A'), // approve all
  z.literal('D'), // deny all
  z.string().regex(/^[ad]\d{1,2}$/), // approve/deny call i
  z.string().regex(/^o\d{1,2}$/), // choose option i of a question
  z.literal('S'), // stop the running turn
  z.literal('R'), // deny with a reason: opens a form, decides nothing itself
  z.string().regex(/^f\d{1,2}$/), // show call i's full arguments: a view, no decision
  z.string().regex(/^g\d{1,2}$/), // approve call i and grant it "always allow here"
  z.literal('V'), // share a change card's full diff as a file: a view, no decision
  z.literal('C'), // the requester goes on without connecting their own account: its calls are not run
]);

/** What an Approve/Deny button carries: only the nonce and the decision, as `nonce.decision`. */
export const ButtonPayload = z
  .string()
  .max(100)
  .transform((value, ctx) => {
    const [nonce, decision, ...rest] = value.split('.');
    const parsedDecision = DecisionCode.safeParse(decision);
    if (rest.length > 0 || !nonce || !NONCE_PATTERN.test(nonce) || !parsedDecision.success) {
      ctx.addIssue({ code: 'custom', message: 'not an approval button' });
      return z.NEVER;
    }
    return { nonce, decision: parsedDecision.data };
  });
export type ButtonPayload = z.output<typeof ButtonPayload>;

export function buttonValue(nonce: string, decision: string): string {
  return `${nonce}.${decision}`;
}

/** "Continue without it" beside a private Connect link: the requester's calls that wait for the connection are not run. */
export function continueWithoutValue(nonce: string): string {
  return buttonValue(nonce, 'C');
}

/** A change card's "Full diff" button. */
export function fullDiffValue(nonce: string): string {
  return buttonValue(nonce, 'V');
}

/** A Deny-with-reason form's id: the nonce it denies (Slack callback/private metadata, Discord modal custom_id). */
const DENY_FORM_PREFIX = 'deny:';

export function denyFormId(nonce: string): string {
  return `${DENY_FORM_PREFIX}${nonce}`;
}

/** The nonce a Deny-with-reason form is for, or undefined for any other id. */
export function parseDenyFormId(id: string): string | undefined {
  const nonce = id.startsWith(DENY_FORM_PREFIX) ? id.slice(DENY_FORM_PREFIX.length) : '';
  return NONCE_PATTERN.test(nonce) ? nonce : undefined;
}

/** Reasons longer than this are refused by the forms (and cut if they arrive longer anyway). */
export const MAX_DENY_REASON = 500;

/** A Revoke button of the grants list: `revoke-grant:<grant id>`. */
const REVOKE_GRANT_PREFIX = 'revoke-grant:';

export function revokeGrantValue(grantId: string): string {
  return `${REVOKE_GRANT_PREFIX}${grantId}`;
}

/** The grant a Revoke button revokes, or undefined for any other value. */
function parseRevokeGrant(value: string): string | undefined {
  const id = value.startsWith(REVOKE_GRANT_PREFIX) ? value.slice(REVOKE_GRANT_PREFIX.length) : '';
  return /^[0-9a-f-]{36}$/.test(id) ? id : undefined;
}

/**
 * A Disconnect button of a person's connections list: `disconnect:<server>`. It names no person: a
 * click ends the clicker's own connection, so a forwarded or forged one can end nobody else's.
 */
const DISCONNECT_PREFIX = 'disconnect:';

export function disconnectValue(server: string): string {
  return `${DISCONNECT_PREFIX}${server}`;
}

/** The server a Disconnect button names, or undefined for any other value. */
function parseDisconnect(value: string): string | undefined {
  const server = value.startsWith(DISCONNECT_PREFIX) ? value.slice(DISCONNECT_PREFIX.length) : '';
  return /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(server) ? server : undefined;
}

/** A feedback button on a final answer: `feedback:<up|down>:<work item id>`. */
export const FEEDBACK_PREFIX = 'feedback:';

export function feedbackValue(workItemId: string, vote: 'up' | 'down'): string {
  return `${FEEDBACK_PREFIX}${vote}:${workItemId}`;
}

/** The turn and vote a feedback button carries, or undefined for any other value. */
function parseFeedback(value: string): { workItemId: string; vote: 'up' | 'down' } | undefined {
  const match = /^feedback:(up|down):([0-9a-f-]{36})$/.exec(value);
  return match ? { vote: match[1] as 'up' | 'down', workItemId: match[2]! } : undefined;
}

export const STOP_BUTTON_PREFIX = 'stop:';

export function stopButtonValue(workItemId: string): string {
  return `${STOP_BUTTON_PREFIX}${workItemId}`;
}

/** The turn a Stop button stops, or undefined for any other value. */
export function parseStopButton(value: string): string | undefined {
  const id = value.startsWith(STOP_BUTTON_PREFIX) ? value.slice(STOP_BUTTON_PREFIX.length) : '';
  return /^[0-9a-f-]{36}$/.test(id) ? id : undefined;
}

/** An allowance offer's button under a budget refusal: `budget-allow:<offer id>`. */
const ALLOW_BUDGET_PREFIX = 'budget-allow:';

export function allowBudgetValue(offerId: string): string {
  return `${ALLOW_BUDGET_PREFIX}${offerId}`;
}

/** The offer an allowance button grants, or undefined for any other value. */
function parseAllowBudget(value: string): string | undefined {
  const id = value.startsWith(ALLOW_BUDGET_PREFIX) ? value.slice(ALLOW_BUDGET_PREFIX.length) : '';
  return /^[0-9a-f-]{36}$/.test(id) ? id : undefined;
}

/**
 * A schedule's Pause/Resume/Delete/History button (docs/schedules.md): `schedule:<verb>:<schedule id>`.
 * History changes nothing: it shows the last runs to the presser alone.
 */
const SCHEDULE_BUTTON = /^schedule:(pause|resume|delete|history):([0-9a-f-]{36})$/;
export type ScheduleButtonVerb = 'pause' | 'resume' | 'delete' | 'history';

export function scheduleButtonValue(change: ScheduleButtonVerb, scheduleId: string): string {
  return `schedule:${change}:${scheduleId}`;
}

/** The change and schedule a schedule's button carries, or undefined for any other value. */
function parseScheduleButton(value: string): { change: ScheduleButtonVerb; scheduleId: string } | undefined {
  const match = SCHEDULE_BUTTON.exec(value);
  return match ? { change: match[1] as ScheduleButtonVerb, scheduleId: match[2]! } : undefined;
}

/** What a pressed button asks for: every button value Countersign writes, decoded in one place. */
export type ButtonVerb =
  /** Deny with a reason: open the form; deciding waits for its submission. */
  | { verb: 'deny-form'; nonce: string }
  /** Show one call's whole arguments to the clicker. */
  | { verb: 'full-arguments'; nonce: string; call: number }
  /** Share a change card's whole diff as a file in its conversation. */
  | { verb: 'full-diff'; nonce: string }
  | { verb: 'feedback'; workItemId: string; vote: 'up' | 'down' }
  | { verb: 'revoke-grant'; grantId: string }
  /** End the clicker's own connection to a per-person server. */
  | { verb: 'disconnect'; server: string }
  | { verb: 'stop'; workItemId: string }
  /** Grant a budget's allowance offer (an approver, not the requester). */
  | { verb: 'allow-budget'; offerId: string }
  /** Pause, resume, delete a schedule or show its history; only its owner or an approver may. */
  | { verb: 'schedule'; change: ScheduleButtonVerb; scheduleId: string }
  /** Anything else is a card's decision (or a forged value), which the approval service verifies. */
  | { verb: 'decide'; value: string };

export function decodeButton(value: string): ButtonVerb {
  const card = ButtonPayload.safeParse(value);
  if (card.success && card.data.decision === 'R') return { verb: 'deny-form', nonce: card.data.nonce };
  if (card.success && card.data.decision === 'V') return { verb: 'full-diff', nonce: card.data.nonce };
  if (card.success && card.data.decision.startsWith('f'))
    return { verb: 'full-arguments', nonce: card.data.nonce, call: Number(card.data.decision.slice(1)) };
  const feedback = parseFeedback(value);
  if (feedback) return { verb: 'feedback', ...feedback };
  const grantId = parseRevokeGrant(value);
  if (grantId) return { verb: 'revoke-grant', grantId };
  const server = parseDisconnect(value);
  if (server) return { verb: 'disconnect', server };
  const schedule = parseScheduleButton(value);
  if (schedule) return { verb: 'schedule', ...schedule };
  const stopId = parseStopButton(value);
  if (stopId) return { verb: 'stop', workItemId: stopId };
  const offerId = parseAllowBudget(value);
  if (offerId) return { verb: 'allow-budget', offerId };
  return { verb: 'decide', value };
}
