import { z } from 'zod';
import { buttonValue, denyFormId, MAX_DENY_REASON } from '../../../core/buttons.ts';
import { LIMITS } from '../limits.ts';
import { neutralizeMentions } from '../format/mentions.ts';
import {
  ButtonStyle,
  NO_MENTIONS,
  type ApiActionRow,
  type ApiButton,
  type ApiEmbed,
  type ApiEmbedField,
  type ApiMessagePayload,
} from './api-shapes.ts';
import { actionRows, button } from './buttons.ts';
import { approvalCustomId, ApprovalDecision } from './custom-id.ts';

/**
 * The approval card: what a risky plan will do, and the buttons that let a person allow it.
 * The input is platform-neutral (src/approval fills it); everything Discord-specific — limits,
 * custom_ids, `<t:…:R>` timestamps — is decided here.
 */

const CallRisk = z.enum(['low', 'medium', 'high']);

const ApprovalCardCall = z.object({
  /** The call's position in the plan; the button ids carry it back. */
  index: z.number().int().min(0).max(99),
  tool: z.string().min(1),
  /** The arguments as the approver should read them (pretty JSON, a command line). */
  argsPretty: z.string(),
  risk: CallRisk,
  /** Extra context from the tool, e.g. the diff an edit would apply. */
  detail: z.string().optional(),
  /** Who may decide it and the policy rule that asked. */
  who: z.string().optional(),
  /** All of the arguments; when the card cannot show them whole, a "Full arguments" button does. */
  argsFull: z.string().optional(),
  /** What "Always allow here" would grant; its button is offered only with this sentence. */
  grant: z.string().optional(),
});
type ApprovalCardCall = z.infer<typeof ApprovalCardCall>;

export const ApprovalCardInput = z.object({
  nonce: z.string().min(1),
  calls: z.array(ApprovalCardCall).min(1),
  /** The first characters of the plan's scope hash, so approvers can match card and audit log. */
  planHashPrefix: z.string().min(1).max(64),
  expiresAt: z.date(),
  /** How to name the person who asked, e.g. `<@123>` (never pings: allowed_mentions is empty). */
  requesterLabel: z.string().min(1),
  /** A line under the title: who asked and where (a copy sent to approvers), or where copies went. */
  note: z.string().max(1000).optional(),
  /**
   * A card posted by a run nobody watches (a scheduled run): the requester's user id, mentioned first
   * on a pending card and let through allowed_mentions, so they alone are notified.
   */
  mention: z
    .string()
    .regex(/^\d{1,20}$/)
    .optional(),
  /**
   * A change card (docs/code-work.md): Approve and Deny carry these labels ("Merge into main",
   * "Discard"), "Full diff" sends `fullDiffValue`, and no standing grant is offered.
   */
  change: z
    .object({
      approveLabel: z.string().min(1),
      denyLabel: z.string().min(1),
      fullDiffValue: z.string().min(1).max(LIMITS.customId),
    })
    .optional(),
});
export type ApprovalCardInput = z.infer<typeof ApprovalCardInput>;

export const CallOutcome = z.object({
  index: z.number().int().min(0),
  decision: ApprovalDecision,
  /** Approved with "Always allow here": the grant it created. */
  grantId: z.string().optional(),
});
export type CallOutcome = z.infer<typeof CallOutcome>;

const COLOR = { pending: 0xf0b232, approved: 0x23a55a, denied: 0xf23f43, mixed: 0x5865f2, expired: 0x80848e };
const RISK_MARK = { low: '🟢 low', medium: '🟠 medium', high: '🔴 high' } as const;

/**
 * How a card's calls are spread over messages. Every call gets its own row (Approve #n / Deny #n),
 * and the last message also carries the Approve all / Deny all row, so one message holds at most
 * `actionRows` calls, the last one fewer. Calls are spread evenly (e.g. 12 → 4 + 4 + 4), and the
 * layout depends only on the number of calls, so every later render patches the same messages.
 */
function callPages(callCount: number): Array<{ first: number; count: number }> {
  if (callCount <= 1) return [{ first: 0, count: callCount }];
  const pages = Math.ceil((callCount + 1) / LIMITS.actionRows);
  const base = Math.floor(callCount / pages);
  const extra = callCount % pages;
  const out: Array<{ first: number; count: number }> = [];
  let first = 0;
  for (let p = 0; p < pages; p++) {
    const count = base + (p < extra ? 1 : 0);
    out.push({ first, count });
    first += count;
  }
  return out;
}

/**
 * A pending card, as one or more messages to post in order. Calls in `decided` (decided one by
 * one) show their outcome and lose their buttons. Approve all / Deny all sit only on the last
 * message, posted after every call is visible, and that message says which calls they cover.
 */
export function approvalCard(raw: ApprovalCardInput, decided: CallOutcome[] = []): ApiMessagePayload[] {
  const input = ApprovalCardInput.parse(raw);
  const n = input.calls.length;
  const byIndex = new Map(decided.map((o) => [o.index, o.decision]));
  const what = n === 1 ? 'an action' : `${n} actions`;
  const pages = callPages(n);
  return pages.map((page, p) => {
    const calls = input.calls.slice(page.first, page.first + page.count);
    const last = p === pages.length - 1;
    const range = `#${page.first + 1}–#${page.first + page.count}`;
    let content =
      p === 0
        ? `🔐 **Approval needed** — ${clip(input.requesterLabel, 100)} asked for ${what} that ${n === 1 ? 'needs' : 'need'} a person's OK. ` +
          `Expires ${relativeTime(input.expiresAt)}.`
        : `🔐 **Approval needed** (continued, ${p + 1} of ${pages.length}) — calls ${range}.`;
    if (pages.length > 1 && p === 0) content += ` The calls are listed over ${pages.length} messages.`;
    if (p === 0 && input.mention) content = `<@${input.mention}> a scheduled run of yours is waiting. ${content}`;
    if (pages.length > 1 && last) {
      content += ` **Approve all** / **Deny all** below decide every call still open in these ${pages.length} messages (#1–#${n}).`;
    }
    const embedTitle = pages.length > 1 ? `Approval needed (${p + 1}/${pages.length})` : 'Approval needed';
    return {
      content: clip(noLinkPreviews(content), LIMITS.messageContent),
      embeds: [
        callsEmbed(input, calls, embedTitle, COLOR.pending, (call) => {
          const d = byIndex.get(call.index);
          return d === 'approve' ? '✅ approved' : d === 'deny' ? '❌ denied' : undefined;
        }),
      ],
      components: approvalButtons(input, calls, byIndex, last),
      allowed_mentions: p === 0 && input.mention ? { parse: [], users: [input.mention] } : NO_MENTIONS,
    };
  });
}

/** The card after a decision: the same messages with each call's outcome, and no buttons left to click. */
export function decidedApprovalCard(
  raw: ApprovalCardInput,
  outcomes: CallOutcome[],
  deciderLabel: string,
): ApiMessagePayload[] {
  const input = ApprovalCardInput.parse(raw);
  const byIndex = new Map(outcomes.map((o) => [o.index, o.decision]));
  const grants = new Map(outcomes.filter((o) => o.grantId).map((o) => [o.index, o.grantId!.slice(0, 8)]));
  const decided = input.calls.map((c) => byIndex.get(c.index));
  const all = (d: ApprovalDecision) => decided.every((x) => x === d);
  const verdict = all('approve') ? 'approved' : all('deny') ? 'denied' : 'mixed';
  const headline = { approved: '✅ **Approved**', denied: '❌ **Denied**', mixed: '☑️ **Decided**' }[verdict];
  return closedPages(
    input,
    `${headline} by ${clip(deciderLabel, 100)}.`,
    `Approval ${verdict}`,
    COLOR[verdict],
    (call) => {
      const d = byIndex.get(call.index);
      const grant = grants.get(call.index);
      if (d === 'approve' && grant) return `✅ approved · always allowed here (grant ${grant})`;
      return d === 'approve' ? '✅ approved' : d === 'deny' ? '❌ denied' : '⏹ not decided (did not run)';
    },
  );
}

/** The card once its time ran out: nothing ran, and the buttons are gone. */
export function expiredApprovalCard(raw: ApprovalCardInput): ApiMessagePayload[] {
  const input = ApprovalCardInput.parse(raw);
  return closedPages(
    input,
    '⌛ **Approval expired** — nothing ran. Ask again if it is still needed.',
    'Approval expired',
    COLOR.expired,
    () => '⌛ expired (did not run)',
  );
}

/** The card once the plan changed under it: nothing ran, and the buttons are gone. */
export function refusedApprovalCard(raw: ApprovalCardInput): ApiMessagePayload[] {
  const input = ApprovalCardInput.parse(raw);
  return closedPages(
    input,
    '⛔ **Refused** — the plan or its scope changed after the request; nothing ran.',
    'Approval refused',
    COLOR.expired,
    () => '⛔ refused (did not run)',
  );
}

/** The card once its requester sent a newer message: nothing ran, and the buttons are gone. */
export function supersededApprovalCard(raw: ApprovalCardInput): ApiMessagePayload[] {
  const input = ApprovalCardInput.parse(raw);
  return closedPages(
    input,
    '⏭ **Superseded by a newer message** — nothing ran; the agent re-plans with it.',
    'Approval superseded',
    COLOR.expired,
    () => '⏭ superseded (did not run)',
  );
}

/** Every message of a card that can no longer be decided, laid out like the pending card it replaces. */
function closedPages(
  input: ApprovalCardInput,
  headline: string,
  title: string,
  color: number,
  status: (call: ApprovalCardCall) => string,
): ApiMessagePayload[] {
  const pages = callPages(input.calls.length);
  return pages.map((page, p) => ({
    content: clip(
      noLinkPreviews(pages.length > 1 ? `${headline} (${p + 1} of ${pages.length})` : headline),
      LIMITS.messageContent,
    ),
    embeds: [
      callsEmbed(
        input,
        input.calls.slice(page.first, page.first + page.count),
        pages.length > 1 ? `${title} (${p + 1}/${pages.length})` : title,
        color,
        status,
      ),
    ],
    components: [],
    allowed_mentions: NO_MENTIONS,
  }));
}

/** "Full arguments" for a call the card may not show whole: answered privately with every character. */
function fullArgsButton(nonce: string, call: ApprovalCardCall): ApiButton[] {
  const full = call.argsFull ?? call.argsPretty;
  if (full.length <= LIMITS.fieldSafeArgs && full === call.argsPretty) return [];
  return [button(`Full arguments #${call.index + 1}`, buttonValue(nonce, `f${call.index}`), ButtonStyle.secondary)];
}

/** "Always allow here" for a call the policy lets become a grant; the card's text says what it covers. */
function grantButton(nonce: string, call: ApprovalCardCall, label: string): ApiButton[] {
  return call.grant ? [button(label, buttonValue(nonce, `g${call.index}`), ButtonStyle.secondary)] : [];
}

function approvalButtons(
  input: ApprovalCardInput,
  calls: ApprovalCardCall[],
  decided: Map<number, ApprovalDecision>,
  last: boolean,
): ApiActionRow[] {
  const { nonce } = input;
  const decide = (call: number | 'all', decision: ApprovalDecision) => approvalCustomId({ nonce, decision, call });
  if (input.calls.length === 1 && input.change) {
    const { change } = input;
    return actionRows([
      button(change.approveLabel, decide('all', 'approve'), ButtonStyle.success),
      button(change.denyLabel, decide('all', 'deny'), ButtonStyle.danger),
      button('Deny with reason…', buttonValue(nonce, 'R'), ButtonStyle.secondary),
      button('Full diff', change.fullDiffValue, ButtonStyle.secondary),
      ...fullArgsButton(nonce, input.calls[0]!),
    ]);
  }
  if (input.calls.length === 1) {
    // One call: deciding it is deciding the whole plan, the same `A` / `D` every platform sends.
    return actionRows([
      button('Approve', decide('all', 'approve'), ButtonStyle.success),
      ...grantButton(nonce, input.calls[0]!, 'Always allow here'),
      button('Deny', decide('all', 'deny'), ButtonStyle.danger),
      button('Deny with reason…', buttonValue(nonce, 'R'), ButtonStyle.secondary),
      ...fullArgsButton(nonce, input.calls[0]!),
    ]);
  }
  const rows: ApiActionRow[] = [];
  for (const call of calls) {
    if (decided.has(call.index)) continue;
    const perCall: ApiButton[] = [
      button(`Approve #${call.index + 1} ${call.tool}`, decide(call.index, 'approve'), ButtonStyle.success),
      ...grantButton(nonce, call, `Always allow #${call.index + 1} here`),
      button(`Deny #${call.index + 1}`, decide(call.index, 'deny'), ButtonStyle.danger),
      ...fullArgsButton(nonce, call),
    ];
    rows.push({ type: 1, components: perCall });
  }
  if (last) {
    rows.push({
      type: 1,
      components: [
        button('Approve all', decide('all', 'approve'), ButtonStyle.success),
        button('Deny all', decide('all', 'deny'), ButtonStyle.danger),
        button('Deny with reason…', buttonValue(nonce, 'R'), ButtonStyle.secondary),
      ],
    });
  }
  return rows;
}

/**
 * Text for a card's `content` with every link wrapped in `<…>`, which Discord never previews.
 * Cards cannot carry SUPPRESS_EMBEDS (it hides their own rich embed too), so this is what keeps a
 * link in a person's name from being fetched. Discord only previews links in `content`, never in
 * embed text, so the embed needs no such care.
 */
function noLinkPreviews(text: string): string {
  return text.replace(/<?(https?:\/\/[^\s<>]+)>?/gi, '<$1>');
}

function callsEmbed(
  input: ApprovalCardInput,
  shown: ApprovalCardCall[],
  title: string,
  color: number,
  status: (call: ApprovalCardCall) => string | undefined,
): ApiEmbed {
  const description = clip(
    `Requested by ${input.requesterLabel} · expires ${relativeTime(input.expiresAt)}${input.note ? `\n${input.note}` : ''}`,
    LIMITS.embedDescription,
  );
  const footer = { text: clip(`plan ${input.planHashPrefix}`, LIMITS.embedFooter) };
  const names = shown.map((call) => {
    const s = status(call);
    return clip(
      `#${call.index + 1} ${call.tool} · ${RISK_MARK[call.risk]} risk${s ? ` · ${s}` : ''}`,
      LIMITS.embedFieldName,
    );
  });
  // Every character of the embed counts toward one 6000-character total; share what is left evenly.
  const fixed = title.length + description.length + footer.text.length + names.reduce((sum, x) => sum + x.length, 0);
  const perField = Math.min(
    LIMITS.embedFieldValue,
    Math.floor((LIMITS.embedTotal - fixed) / Math.max(1, shown.length)),
  );
  // A page holds at most `actionRows` calls, far under the 25 fields an embed allows.
  const fields: ApiEmbedField[] = shown.map((call, i) => ({ name: names[i]!, value: callBody(call, perField) }));
  return { title, description, color, fields, footer };
}

/** Arguments (and detail) as code blocks that fit `budget` characters together. */
function callBody(call: ApprovalCardCall, budget: number): string {
  if (call.who) {
    const who = clip(`*${call.who.replace(/[*_`~|]/g, '')}*`, Math.floor(budget / 3));
    return `${who}\n${callBody({ ...call, who: undefined }, budget - who.length - 1)}`;
  }
  if (call.grant) {
    // Not restyled: the sentence's code spans carry the tool and patterns exactly as they will be matched.
    const grant = clip(call.grant, Math.floor(budget / 3));
    return `${callBody({ ...call, grant: undefined }, budget - grant.length - 1)}\n${grant}`;
  }
  if (!call.detail) return codeBlock(call.argsPretty, budget);
  const argsBudget = Math.floor(budget / 2);
  const args = codeBlock(call.argsPretty, argsBudget);
  return `${args}\n${codeBlock(call.detail, budget - args.length - 1)}`;
}

/**
 * A fenced block of at most `max` characters. Backtick runs inside are broken with a zero-width
 * space so model-written text cannot close the fence and smuggle markdown (or mentions) out.
 */
function codeBlock(text: string, max: number): string {
  const open = '```\n';
  const close = '\n```';
  const safe = neutralizeMentions(text).replace(/`{3,}/g, (run) => run.split('').join('\u200b'));
  const room = max - open.length - close.length;
  if (room <= 0) return '';
  if (safe.length <= room) return `${open}${safe}${close}`;
  const marker = `\n… ${safe.length} characters, cut`;
  return `${open}${clip(safe, room - marker.length, '')}${marker}${close}`;
}

/** At most `max` characters, ending in `ellipsis` when cut, never splitting a surrogate pair. */
function clip(text: string, max: number, ellipsis = '…'): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max - ellipsis.length);
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}${ellipsis}`;
}

/** Discord renders `<t:unix:R>` as "in 5 minutes" in each reader's own locale and time zone. */
function relativeTime(at: Date): string {
  return `<t:${Math.floor(at.getTime() / 1000)}:R>`;
}

/**
 * The Deny-with-reason form: a modal (interaction response type 9) with one text input. Its
 * custom_id names the card's nonce; the submission (interaction type 5) is verified like a click.
 */
export function denyReasonModal(nonce: string): {
  custom_id: string;
  title: string;
  components: Array<{ type: 1; components: Array<Record<string, unknown>> }>;
} {
  return {
    custom_id: denyFormId(nonce),
    title: 'Deny with a reason',
    components: [
      {
        type: 1,
        components: [
          {
            type: 4,
            custom_id: 'reason',
            style: 2,
            label: 'Why? The agent reads this and plans again.',
            max_length: MAX_DENY_REASON,
            required: false,
            placeholder: 'e.g. not the production cluster; use staging',
          },
        ],
      },
    ],
  };
}
