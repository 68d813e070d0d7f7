import type { ReplyButton } from '../reply/outbound.ts';
import { buttonValue } from './envelope.ts';

/** A platform-neutral approval card: adapters render it as Block Kit, Discord components or text. */
export interface ApprovalCard {
  envelopeId: string;
  nonce: string;
  kind: 'tools' | 'question';
  calls: Array<{
    index: number;
    id: string;
    tool: string;
    argsPretty: string;
    risk: 'low' | 'medium' | 'high';
    detail?: string;
  }>;
  question?: string;
  options?: string[];
  planHashPrefix: string;
  expiresAt: Date;
  requesterLabel: string;
  state: 'pending' | 'decided' | 'expired' | 'refused';
  decisions?: Array<{ index: number; approved: boolean; answer?: string; by: string }>;
  decidedAt?: Date;
}

const RISK_MARK = { low: '🟢 low', medium: '🟠 medium', high: '🔴 high' } as const;
const MAX_ARGS_CHARS = 1500;

/** Pretty-prints arguments for a person, cut safely (never inside a surrogate pair) with a note. */
export function prettyArgs(args: unknown, max = MAX_ARGS_CHARS): string {
  const text = JSON.stringify(args, null, 2) ?? 'null';
  if (text.length <= max) return text;
  let cut = max;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return `${text.slice(0, cut)}\n… (${text.length - cut} more characters; the full arguments are in the plan hash)`;
}

/** Neutralises fences inside text that is shown in a code block. */
function fenceSafe(text: string): string {
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
    for (const call of card.calls) {
      lines.push(
        '',
        `${call.index + 1}. \`${call.tool}\` — risk ${RISK_MARK[call.risk]}`,
        '```json',
        fenceSafe(call.argsPretty),
        '```',
      );
      if (call.detail) lines.push('```diff', fenceSafe(call.detail), '```');
    }
  }
  lines.push('', `plan ${card.planHashPrefix} · expires ${card.expiresAt.toISOString()}`);
  if (card.state === 'decided') {
    for (const d of card.decisions ?? []) {
      const what = d.answer !== undefined ? `answered "${d.answer}"` : d.approved ? 'approved' : 'denied';
      const call = card.calls[d.index];
      lines.push(`${card.kind === 'question' ? '' : `${d.index + 1}. \`${call?.tool ?? '?'}\` `}${what} by ${d.by}`);
    }
    if (card.decidedAt) lines.push(`decided ${card.decidedAt.toISOString()}`);
  } else if (card.state === 'expired') {
    lines.push('⌛ Expired — nothing was run.');
  } else if (card.state === 'refused') {
    lines.push('⛔ Refused — the plan or its scope changed after the request; nothing was run.');
  }
  return lines.join('\n');
}

/** The card's buttons while it is pending (none once decided or expired). */
export function cardButtons(card: ApprovalCard): ReplyButton[] {
  if (card.state !== 'pending') return [];
  if (card.kind === 'question') {
    return (card.options ?? []).map((o, i) => ({
      label: o.slice(0, 75),
      value: buttonValue(card.nonce, `o${i}`),
      style: 'primary',
    }));
  }
  const buttons: ReplyButton[] = [];
  if (card.calls.length === 1) {
    buttons.push({ label: 'Approve', value: buttonValue(card.nonce, 'A'), style: 'primary' });
    buttons.push({ label: 'Deny', value: buttonValue(card.nonce, 'D'), style: 'danger' });
    return buttons;
  }
  const decided = new Set((card.decisions ?? []).map((d) => d.index));
  for (const call of card.calls) {
    if (decided.has(call.index)) continue;
    buttons.push({
      label: `Approve ${call.index + 1}`,
      value: buttonValue(card.nonce, `a${call.index}`),
      style: 'primary',
    });
    buttons.push({
      label: `Deny ${call.index + 1}`,
      value: buttonValue(card.nonce, `d${call.index}`),
      style: 'danger',
    });
  }
  buttons.push({ label: 'Approve all', value: buttonValue(card.nonce, 'A'), style: 'primary' });
  buttons.push({ label: 'Deny all', value: buttonValue(card.nonce, 'D'), style: 'danger' });
  return buttons;
}
