import type { ReplyButton } from '../../core/reply-target.ts';
import {
  allCallsButtons,
  callButtons,
  callHeading,
  CLOSED_NOTE,
  decisionText,
  fenceSafe,
  questionButtons,
} from '../../approval/card.ts';
import { type ApprovalCard } from '../../core/approval-card.ts';
import type { KnownBlock } from '@slack/web-api';
import {
  buttonValue,
  FEEDBACK_PREFIX,
  MAX_DENY_REASON,
  revokeGrantValue,
  scheduleButtonValue,
} from '../../core/buttons.ts';
import type { ScheduleListing } from '../../core/schedule-list.ts';
import { fitMrkdwn, markdownToMrkdwn, mrkdwnPieces } from './format/index.ts';
import { LIMITS } from './limits.ts';
import { SLACK_RULES } from './rules.ts';

export type Block = KnownBlock;

/** A section of mrkdwn already within the limit (the slice only guards against a builder's mistake). */
function section(text: string): Block {
  return { type: 'section', text: { type: 'mrkdwn', text: text.slice(0, LIMITS.sectionText) } };
}

/** A section of Markdown: cut, then converted (format/fit.ts), so no entity or link is cut in half. */
function markdownSection(markdown: string): Block {
  return section(fitMrkdwn(markdown, LIMITS.sectionText) || ' ');
}

const STYLE = { primary: 'primary', danger: 'danger' } as const;

function actions(buttons: ReplyButton[], prefix: string): Block[] {
  const blocks: Block[] = [];
  for (let i = 0; i < buttons.length; i += LIMITS.actionsElements) {
    blocks.push({
      type: 'actions',
      elements: buttons.slice(i, i + LIMITS.actionsElements).map((b, j) => ({
        type: 'button',
        // Slack sends a click on a link button too; its action id says there is nothing to do.
        action_id: b.url ? `${CONNECT_LINK_ACTION}_${i + j}` : `${prefix}_${i + j}`,
        text: { type: 'plain_text', text: b.label.slice(0, LIMITS.buttonText), emoji: true },
        ...(b.url ? { url: b.url } : { value: b.value }),
        ...(b.style === 'secondary' ? {} : { style: STYLE[b.style] }),
      })),
    });
  }
  return blocks;
}

/** `/countersign schedules`: one section per schedule, then its Pause (or Resume) and Delete buttons. */
export function scheduleListBlocks(listing: ScheduleListing): Block[] {
  const blocks: Block[] = [markdownSection(listing.heading)];
  for (const { id, text, paused } of listing.entries) {
    const change = paused ? 'resume' : 'pause';
    blocks.push(markdownSection(text), {
      type: 'actions',
      elements: [
        {
          type: 'button',
          action_id: `countersign_schedule_${change}_${id.slice(0, 8)}`,
          text: { type: 'plain_text', text: paused ? 'Resume' : 'Pause', emoji: true },
          value: scheduleButtonValue(change, id),
        },
        {
          type: 'button',
          action_id: `countersign_schedule_history_${id.slice(0, 8)}`,
          text: { type: 'plain_text', text: 'History', emoji: true },
          value: scheduleButtonValue('history', id),
        },
        {
          type: 'button',
          action_id: `countersign_schedule_delete_${id.slice(0, 8)}`,
          text: { type: 'plain_text', text: 'Delete', emoji: true },
          style: 'danger',
          value: scheduleButtonValue('delete', id),
        },
      ],
    });
  }
  return blocks;
}

/** `/countersign grants`: one section per grant, each with its Revoke button. */
export function grantListBlocks(lines: Array<{ id: string; text: string }>, total: number): Block[] {
  const blocks: Block[] = [markdownSection(`**Standing grants that apply here** (${total})`)];
  for (const { id, text } of lines.slice(0, LIMITS.listedGrants)) {
    blocks.push({
      type: 'section',
      text: { type: 'mrkdwn', text: fitMrkdwn(text, LIMITS.sectionText) },
      accessory: {
        type: 'button',
        action_id: `countersign_revoke_${id.slice(0, 8)}`,
        text: { type: 'plain_text', text: 'Revoke', emoji: true },
        style: 'danger',
        value: revokeGrantValue(id),
      },
    });
  }
  if (total > LIMITS.listedGrants)
    blocks.push(context(`… and ${total - LIMITS.listedGrants} more; \`countersign grants list\` shows them all.`));
  return blocks;
}

/** The action_id of a Connect link button: Slack sends a click on it too, and there is nothing to do. */
export const CONNECT_LINK_ACTION = 'countersign_connect_link';

/** Slack's bound on a button's `url` (Block Kit, button element): a longer link is shown as text only. */
const MAX_BUTTON_URL = 3000;

/**
 * A Connect link for one person (`/countersign connect`), to be sent only where they alone see it: a
 * link button to the authorization URL, and the URL itself as text for clients without buttons (and
 * for notifications). The server name is shown as text: Markdown conversion keeps a mention in it
 * from pinging.
 */
export function connectLinkMessage(server: string, url: string): { text: string; blocks: Block[] } {
  const link = `<${slackUrl(url)}>`;
  const blocks: Block[] = [
    markdownSection(
      `Sign in to connect **your own** ${server} account. This link is for you alone: do not share it. It works once, and not for long.`,
    ),
  ];
  if (url.length <= MAX_BUTTON_URL) {
    blocks.push({
      type: 'actions',
      elements: [
        {
          type: 'button',
          action_id: CONNECT_LINK_ACTION,
          text: { type: 'plain_text', text: `Connect ${server}`.slice(0, LIMITS.buttonText), emoji: false },
          url,
          style: 'primary',
        },
      ],
    });
  }
  // An explicit <link>: a bare URL's `_` and `*` could otherwise be read as formatting.
  const line = `Or open: ${link}`;
  if (line.length <= LIMITS.contextText) blocks.push(context(line));
  return { text: `${markdownToMrkdwn(`Connect your own ${server} account (for you alone):`)} ${link}`, blocks };
}

/** A URL inside mrkdwn's `<…>`: `&` escaped as Slack asks, and what would end the link percent-encoded. */
const slackUrl = (url: string) =>
  url.replace(/&/g, '&amp;').replace(/</g, '%3C').replace(/>/g, '%3E').replace(/\|/g, '%7C');

/** A reply's blocks: its text as mrkdwn sections (each ≤ 3000 characters) and its buttons. */
export function replyBlocks(markdown: string, buttons: ReplyButton[] = []): Block[] {
  const sections = mrkdwnPieces(markdown, LIMITS.sectionText).map((piece) => section(piece || ' '));
  const feedback = buttons.filter((b) => b.value.startsWith(FEEDBACK_PREFIX));
  const others = buttons.filter((b) => !b.value.startsWith(FEEDBACK_PREFIX));
  return [...sections, ...actions(others, 'countersign'), ...feedbackBlock(feedback)].slice(0, LIMITS.blocks);
}

/** Feedback on an answer as Slack's own thumbs (a context_actions block with feedback_buttons). */
export function feedbackBlock(buttons: ReplyButton[]): Block[] {
  const up = buttons.find((b) => b.value.startsWith(`${FEEDBACK_PREFIX}up:`));
  const down = buttons.find((b) => b.value.startsWith(`${FEEDBACK_PREFIX}down:`));
  if (!up || !down) return [];
  return [
    {
      type: 'context_actions',
      elements: [
        {
          type: 'feedback_buttons',
          action_id: 'countersign_feedback',
          positive_button: {
            text: { type: 'plain_text', text: up.label },
            value: up.value,
            accessibility_label: 'This answer helped',
          },
          negative_button: {
            text: { type: 'plain_text', text: down.label },
            value: down.value,
            accessibility_label: 'This answer did not help',
          },
        },
      ],
    } as unknown as Block,
  ];
}

/**
 * Calls shown with their own blocks (heading and arguments, maybe a diff, their buttons or decision):
 * at most three blocks each, so 14 calls plus the header, the "more calls" line, the footer and the
 * Approve all row stay within Slack's 50 (46).
 */
/** "Who may decide" is one line under a call's heading; a long approver list is cut. */
const MAX_WHO_CHARS = 300;

const clipText = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/**
 * A code block in a section, under an optional heading, cut (with a note saying how much) until its
 * mrkdwn fits the section limit.
 */
function codeSection(code: string, language = '', heading = ''): Block {
  let keep = code.length;
  for (;;) {
    const shown = keep < code.length ? `${code.slice(0, keep)}\n… (${code.length - keep} more characters)` : code;
    const text = markdownToMrkdwn(`${heading ? `${heading}\n` : ''}\`\`\`${language}\n${fenceSafe(shown)}\n\`\`\``);
    if (text.length <= LIMITS.sectionText) return section(text);
    // The heading alone is too long: nothing more to cut from the code, so the heading is cut.
    if (keep === 0) return markdownSection(heading);
    // Escaping can grow text up to five-fold (& → &amp;): shrink in proportion, then a little more.
    keep = Math.max(0, Math.floor(keep * (LIMITS.sectionText / text.length) * 0.95));
  }
}

/** A context line of mrkdwn as given (Countersign's own short texts; model or user text goes through markdownContext). */
function context(mrkdwn: string): Block {
  return { type: 'context', elements: [{ type: 'mrkdwn', text: mrkdwn.slice(0, LIMITS.contextText) }] };
}

/** A context line of Markdown: cut, then converted. */
function markdownContext(markdown: string): Block {
  return context(fitMrkdwn(markdown, LIMITS.contextText));
}

/** Slack renders `<!date^…>` in each reader's own time zone; the fallback is shown where it can't. */
function slackDate(date: Date): string {
  const seconds = Math.floor(date.getTime() / 1000);
  return `<!date^${seconds}^{date_short_pretty} at {time}|${date.toISOString()}>`;
}

/** A "Full arguments" button for a call whose arguments the card had to cut. */
function fullArgsButton(card: ApprovalCard, call: ApprovalCard['calls'][number]): ReplyButton[] {
  if (card.state !== 'pending' || !call.argsFull || call.argsFull === call.argsPretty) return [];
  return [{ label: 'Full arguments', value: buttonValue(card.nonce, `f${call.index}`), style: 'secondary' }];
}

/**
 * The approval card as Block Kit messages: a header, one section per call (tool, risk, who may
 * decide, arguments, the diff it would apply) with that call's own buttons, the plan hash and
 * expiry, then Approve all / Deny all / Deny with reason. A card of more calls than one message
 * holds continues in more messages, and the closing buttons sit only on the last, so every call an
 * "Approve all" covers was shown above it. Once decided, each call shows who decided it.
 */
export function approvalCardPages(card: ApprovalCard): Block[][] {
  const header: Block[] = [];
  const pages: Block[][] = [];
  const mention = ownerMention(card);
  if (mention) header.push(context(`${mention} a scheduled run of yours is waiting for this decision.`));
  if (card.kind === 'question') {
    header.push(markdownSection(`**Question from the agent** (asked for ${card.requesterLabel})`));
    header.push(markdownSection(card.question ?? ''));
    const answers = (card.options ?? []).map((o, i) => `${i + 1}. ${o}`).join('\n');
    if (answers) header.push(markdownSection(answers));
    for (const d of card.decisions ?? []) header.push(markdownContext(decisionText(d)));
    pages.push(header);
  } else {
    const n = card.calls.length;
    header.push(markdownSection(`**Approval needed** for ${card.requesterLabel}: ${n} call${n === 1 ? '' : 's'}`));
    const note = card.origin ?? (card.routedTo ? `_${card.routedTo}_` : undefined);
    if (note) header.push(markdownContext(note));
    const decided = new Map((card.decisions ?? []).map((d) => [d.index, d]));
    const messages = Math.max(1, Math.ceil(n / LIMITS.cardCallsPerMessage));
    for (let m = 0; m < messages; m++) {
      const blocks: Block[] = m === 0 ? [...header] : [];
      const calls = card.calls.slice(m * LIMITS.cardCallsPerMessage, (m + 1) * LIMITS.cardCallsPerMessage);
      if (messages > 1) {
        blocks.push(
          context(
            `Calls ${calls[0]!.index + 1}–${calls.at(-1)!.index + 1} of ${n}` +
              (m < messages - 1 ? ' · continued below; Approve all is on the last message.' : ''),
          ),
        );
      }
      for (const call of calls) {
        // Who may decide rides in the heading: a block of its own would push a full card past 50 blocks.
        let heading = call.who ? `${callHeading(call)}\n_${clipText(call.who, MAX_WHO_CHARS)}_` : callHeading(call);
        // A change card offers no standing grant (approval/card.ts), so it does not describe one.
        if (call.grant && card.state === 'pending' && !decided.has(call.index) && !card.change)
          heading += `\n_${clipText(call.grant, MAX_WHO_CHARS)}_`;
        blocks.push(codeSection(call.argsPretty, 'json', heading));
        if (call.detail) blocks.push(codeSection(call.detail, 'diff'));
        const decision = decided.get(call.index);
        if (decision) blocks.push(markdownContext(decisionText(decision)));
        const buttons = [...(decision ? [] : callButtons(card, call.index)), ...fullArgsButton(card, call)];
        if (buttons.length) blocks.push(...actions(buttons, `countersign_call${call.index}`));
      }
      pages.push(blocks);
    }
  }
  const last = pages.at(-1)!;
  const closed =
    card.state === 'expired' || card.state === 'refused' || card.state === 'superseded'
      ? ` · ${CLOSED_NOTE[card.state]}`
      : '';
  const when = card.state === 'decided' && card.decidedAt ? `decided ${slackDate(card.decidedAt)}` : '';
  last.push(context(`plan \`${card.planHashPrefix}\` · ${when || `expires ${slackDate(card.expiresAt)}`}${closed}`));
  const closing = card.kind === 'question' ? questionButtons(card) : allCallsButtons(card);
  if (card.state === 'pending') last.push(...actions(closing, 'countersign_all'));
  return pages;
}

/**
 * The mention that notifies a card's requester (`<@U…>`, Slack's user mention), for a card posted by
 * a run nobody watches; only a well-formed user id becomes one, so nothing else can ever be pinged.
 */
export function ownerMention(card: ApprovalCard): string | undefined {
  return card.state === 'pending' && card.mention && SLACK_RULES.ids.user.test(card.mention)
    ? `<@${card.mention}>`
    : undefined;
}

/** A card that fits one message, as its blocks (tests and small cards); see `approvalCardPages`. */
export function approvalCardBlocks(card: ApprovalCard): Block[] {
  return approvalCardPages(card).flat();
}

/** The Deny-with-reason form's callback id; its private metadata says which card and where to answer. */
export const DENY_FORM_CALLBACK = 'countersign_deny_reason';

/** The Deny-with-reason form (views.open): one text input; submitting it denies the undecided calls. */
export function denyReasonModal(privateMetadata: string): Record<string, unknown> {
  return {
    type: 'modal',
    callback_id: DENY_FORM_CALLBACK,
    private_metadata: privateMetadata,
    title: { type: 'plain_text', text: 'Deny with a reason' },
    submit: { type: 'plain_text', text: 'Deny' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      {
        type: 'input',
        block_id: 'reason',
        label: { type: 'plain_text', text: 'Why? The agent reads this and plans again.' },
        element: {
          type: 'plain_text_input',
          action_id: 'reason',
          multiline: true,
          max_length: MAX_DENY_REASON,
          placeholder: { type: 'plain_text', text: 'e.g. not the production cluster; use staging' },
        },
      },
    ],
  };
}

/** The "Full arguments" view: every character of a call's arguments, in code sections (as many as a modal holds). */
export function fullArgumentsModal(tool: string, text: string): Record<string, unknown> {
  const rendered = (piece: string) => markdownToMrkdwn(`\`\`\`json\n${fenceSafe(piece)}\n\`\`\``).length;
  const chunks: string[] = [];
  let at = 0;
  // Each piece as long as its escaped section allows (escaping can grow text five-fold), so no
  // character is cut; the modal's blocks less two leave room for the heading and a note.
  while (at < text.length && chunks.length < LIMITS.modalBlocks - 2) {
    let size = Math.min(LIMITS.sectionText - 100, text.length - at);
    while (size > 1 && rendered(text.slice(at, at + size)) > LIMITS.sectionText) size = Math.floor(size * 0.8);
    chunks.push(text.slice(at, at + size));
    at += size;
  }
  return {
    type: 'modal',
    title: { type: 'plain_text', text: 'Full arguments' },
    close: { type: 'plain_text', text: 'Close' },
    blocks: [
      markdownContext(`\`${tool}\` · ${text.length} characters`),
      ...chunks.map((chunk) => codeSection(chunk, 'json')),
      ...(at < text.length ? [context(`… ${text.length - at} more characters do not fit a Slack view.`)] : []),
    ],
  };
}
