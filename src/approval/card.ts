import type { ApprovalCard } from '../core/approval-card.ts';
import { buttonValue } from '../core/buttons.ts';
import type { ReplyButton } from '../core/reply-target.ts';

const RISK_MARK = { low: '🟢 low', medium: '🟠 medium', high: '🔴 high' } as const;

/** A call's first line on a card: its number, tool and risk. */
export function callHeading(call: ApprovalCard['calls'][number]): string {
  return `${call.index + 1}. \`${call.tool}\` — risk ${RISK_MARK[call.risk]}`;
}

/** What a card that is no longer pending says about why nothing more will run. */
export const CLOSED_NOTE = {
  expired: '⌛ Expired — nothing was run.',
  refused: '⛔ Refused — the plan or its scope changed after the request; nothing was run.',
  superseded: '⏭ Superseded by a newer message — nothing was run; the agent re-plans with it.',
} as const;
const MAX_ARGS_CHARS = 1500;

/**
 * Characters that change how text reads without being seen, chosen by Unicode property so a new
 * invisible character needs no list update: format characters (`Cf`: direction overrides and
 * isolates, zero-width characters, the BOM, the soft hyphen, tag characters), line and paragraph
 * separators (`Zl`, `Zp`), private-use, surrogate and unassigned code points (`Co`, `Cs`, `Cn`),
 * every default-ignorable code point, and every control character but newline and tab (ESC among
 * them, which could redraw a terminal). Named on top, because they are invisible without being
 * format characters: variation selectors, the Hangul fillers, the braille blank (U+2800), the
 * combining grapheme joiner (U+034F) and the Mongolian vowel separator (U+180E).
 */
const HIDDEN =
  // The combining grapheme joiner stands outside the class: a combining mark inside one misleads.
  /(?![\n\t])(?:[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}\p{Default_Ignorable_Code_Point}\u{FE00}-\u{FE0F}\u{E0100}-\u{E01EF}\u{E0000}-\u{E007F}\u{115F}\u{1160}\u{3164}\u{FFA0}\u{2800}\u{00AD}\u{180E}]|\u{034F})/gu;
/**
 * A run of one space other than U+0020 (no-break, em, ideographic…): it looks like a space and is
 * not one. Counted, so a run of thousands reads as one mark.
 */
const OTHER_SPACE_RUNS = /((?! )\p{Zs})\1*/gu;
/** A run of blanks this long is counted, not shown: thousands of spaces can push a tail off a card. */
const LONG_BLANKS = / {16,}|\t{4,}/g;

function codePointName(c: string): string {
  return `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** A run of one non-ASCII space: `⟨U+00A0⟩` alone, `⟨3 × U+00A0⟩` repeated. */
function otherSpaceRun(run: string, space: string): string {
  const count = [...run].length;
  return count === 1 ? `⟨${codePointName(space)}⟩` : `⟨${count} × ${codePointName(space)}⟩`;
}

/**
 * Text as a person must see it on a card: hidden characters named (`⟨U+202E⟩`), spaces that are not
 * U+0020 named (`⟨U+00A0⟩`, a run `⟨3 × U+3000⟩`), long blank runs counted (`⟨3200 spaces⟩`).
 */
export function makeVisible(text: string): string {
  const named = text.replace(HIDDEN, (c) => `⟨${codePointName(c)}⟩`);
  return named
    .replace(OTHER_SPACE_RUNS, otherSpaceRun)
    .replace(LONG_BLANKS, (run) => `⟨${run.length} ${run[0] === ' ' ? 'spaces' : 'tabs'}⟩`);
}

/** A cut that never splits a surrogate pair. */
function safeCut(text: string, at: number): number {
  const code = text.charCodeAt(at - 1);
  return code >= 0xd800 && code <= 0xdbff ? at - 1 : at;
}

/** The whole arguments as a person reads them: pretty JSON with hidden characters made visible. */
export function fullArgs(args: unknown): string {
  return makeVisible(JSON.stringify(args, null, 2) ?? 'null');
}

/**
 * Pretty-prints arguments for a card. Longer than `max`, it keeps the head and the tail — the end of
 * a command is where `; curl … | sh` hides — and says, where it cut, how much and where to read it all.
 */
export function prettyArgs(args: unknown, max = MAX_ARGS_CHARS): string {
  const text = fullArgs(args);
  if (text.length <= max) return text;
  const head = safeCut(text, Math.floor(max * 0.6));
  const tailStart = text.length - Math.floor(max * 0.3);
  const tail = safeCut(text, tailStart) === tailStart ? tailStart : tailStart + 1;
  return `${text.slice(0, head)}\n… ✂ ${tail - head} characters cut here; "Full arguments" shows them all …\n${text.slice(tail)}`;
}

/** Neutralises fences inside text that is shown in a code block. */
export function fenceSafe(text: string): string {
  return text.replaceAll('```', '`\u200b``');
}

/** The card as plain Markdown, for platforms without rich cards (the console, tests). */
export function cardText(card: ApprovalCard): string {
  const lines: string[] = [];
  if (card.kind === 'question') {
    lines.push(`**Question from the agent** (asked for ${card.requesterLabel})`, '', card.question ?? '');
    (card.options ?? []).forEach((o, i) => lines.push(`${i + 1}. ${o}`));
  } else {
    lines.push(
      `**Approval needed** for ${card.requesterLabel}: ${card.calls.length} call${card.calls.length === 1 ? '' : 's'}`,
    );
    if (card.origin) lines.push(card.origin);
    if (card.routedTo) lines.push(`_${card.routedTo}_`);
    for (const call of card.calls) {
      lines.push('', callHeading(call));
      if (call.who) lines.push(`_${call.who}_`);
      lines.push('```json', fenceSafe(call.argsPretty), '```');
      if (call.grant && card.state === 'pending' && !card.change) lines.push(`_${call.grant}_`);
      if (call.detail) lines.push('```diff', fenceSafe(call.detail), '```');
    }
  }
  lines.push('', `plan ${card.planHashPrefix} · expires ${card.expiresAt.toISOString()}`);
  if (card.state === 'decided') {
    for (const d of card.decisions ?? []) {
      const call = card.calls[d.index];
      lines.push(`${card.kind === 'question' ? '' : `${d.index + 1}. \`${call?.tool ?? '?'}\` `}${decisionText(d)}`);
    }
    if (card.decidedAt) lines.push(`decided ${card.decidedAt.toISOString()}`);
  } else if (card.state === 'expired') {
    lines.push(CLOSED_NOTE.expired);
  } else if (card.state === 'refused') {
    lines.push(CLOSED_NOTE.refused);
  } else if (card.state === 'superseded') {
    lines.push(CLOSED_NOTE.superseded);
  }
  return lines.join('\n');
}

/**
 * The shorter of the platforms' button labels: Slack's LIMITS.buttonText (75) and Discord's
 * LIMITS.buttonLabel (80). A change card's labels name a branch, which can be long.
 */
const MAX_BUTTON_LABEL = 75;

function buttonLabel(label: string): string {
  if (label.length <= MAX_BUTTON_LABEL) return label;
  const end = MAX_BUTTON_LABEL - 1;
  const code = label.charCodeAt(end - 1);
  return `${label.slice(0, code >= 0xd800 && code <= 0xdbff ? end - 1 : end)}…`;
}

/**
 * A change card's buttons (docs/code-work.md): Approve and Deny in the change's own words ("Merge
 * into main", "Discard"), Deny with reason, and "Full diff", which shares the diff as a file instead
 * of putting it on the card. Never "Always allow here": a merge is decided one commit at a time.
 */
function changeButtons(card: ApprovalCard, change: NonNullable<ApprovalCard['change']>): ReplyButton[] {
  return [
    { label: buttonLabel(change.approveLabel), value: buttonValue(card.nonce, 'A'), style: 'primary' },
    { label: buttonLabel(change.denyLabel), value: buttonValue(card.nonce, 'D'), style: 'danger' },
    { label: 'Deny with reason…', value: buttonValue(card.nonce, 'R'), style: 'secondary' },
    { label: 'Full diff', value: change.fullDiffValue, style: 'secondary' },
  ];
}

/** The card's buttons while it is pending (none once decided or expired). */
export function cardButtons(card: ApprovalCard): ReplyButton[] {
  if (card.state !== 'pending') return [];
  if (card.kind === 'question') return questionButtons(card);
  if (card.calls.length === 1) return allCallsButtons(card);
  return [...card.calls.flatMap((call) => callButtons(card, call.index)), ...allCallsButtons(card)];
}

/** The answers to a question card, one button each. */
export function questionButtons(card: ApprovalCard): ReplyButton[] {
  return (card.options ?? []).map((o, i) => ({
    // test/slack/limits.test.ts measures a question card against Slack's limit.
    label: o.slice(0, MAX_BUTTON_LABEL),
    value: buttonValue(card.nonce, `o${i}`),
    style: 'primary',
  }));
}

/** Approve n / Deny n for one call of a multi-call card; none once that call is decided. */
export function callButtons(card: ApprovalCard, index: number): ReplyButton[] {
  if (card.state !== 'pending' || card.calls.length < 2) return [];
  if ((card.decisions ?? []).some((d) => d.index === index)) return [];
  return [
    { label: `Approve ${index + 1}`, value: buttonValue(card.nonce, `a${index}`), style: 'primary' },
    ...grantButton(card, index),
    { label: `Deny ${index + 1}`, value: buttonValue(card.nonce, `d${index}`), style: 'danger' },
  ];
}

/** "Always allow here" for a call the policy lets become a standing grant (the card says what it covers). */
function grantButton(card: ApprovalCard, index: number): ReplyButton[] {
  const call = card.calls[index];
  if (card.state !== 'pending' || !call?.grant || card.change) return [];
  if ((card.decisions ?? []).some((d) => d.index === index)) return [];
  const label = card.calls.length === 1 ? 'Always allow here' : `Always allow ${index + 1} here`;
  return [{ label, value: buttonValue(card.nonce, `g${index}`), style: 'secondary' }];
}

/** Approve / Deny for a single call, Approve all / Deny all for several (the undecided ones). */
export function allCallsButtons(card: ApprovalCard): ReplyButton[] {
  if (card.state !== 'pending') return [];
  if (card.change) return changeButtons(card, card.change);
  const all = card.calls.length === 1 ? '' : ' all';
  return [
    { label: `Approve${all}`, value: buttonValue(card.nonce, 'A'), style: 'primary' },
    ...(card.calls.length === 1 ? grantButton(card, 0) : []),
    { label: `Deny${all}`, value: buttonValue(card.nonce, 'D'), style: 'danger' },
    { label: 'Deny with reason…', value: buttonValue(card.nonce, 'R'), style: 'secondary' },
  ];
}

/** How one decision reads on a card, e.g. "approved by <@U1>". */
export function decisionText(decision: NonNullable<ApprovalCard['decisions']>[number]): string {
  const what =
    decision.answer !== undefined ? `answered "${decision.answer}"` : decision.approved ? 'approved' : 'denied';
  if (decision.reason && !decision.approved) return `not run: ${decision.reason}`;
  const grant = decision.grantId ? ` · always allowed here from now on (grant ${decision.grantId.slice(0, 8)})` : '';
  return `${what} by ${decision.by}${grant}`;
}
