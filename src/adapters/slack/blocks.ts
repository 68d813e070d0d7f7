import type { ReplyButton } from '../../reply/outbound.ts';
import { cardButtons, cardText, type ApprovalCard } from '../../approval/card.ts';
import type { KnownBlock } from '@slack/web-api';
import { markdownToMrkdwn } from './format/index.ts';
import { LIMITS } from './limits.ts';

type Block = KnownBlock;

function section(text: string): Block {
  return { type: 'section', text: { type: 'mrkdwn', text: text.slice(0, LIMITS.sectionText) } };
}

const STYLE = { primary: 'primary', danger: 'danger' } as const;

function actions(buttons: ReplyButton[], prefix: string): Block[] {
  const blocks: Block[] = [];
  for (let i = 0; i < buttons.length; i += LIMITS.actionsElements) {
    blocks.push({
      type: 'actions',
      elements: buttons.slice(i, i + LIMITS.actionsElements).map((b, j) => ({
        type: 'button',
        action_id: `${prefix}_${i + j}`,
        text: { type: 'plain_text', text: b.label.slice(0, LIMITS.buttonText), emoji: true },
        value: b.value,
        ...(b.style === 'secondary' ? {} : { style: STYLE[b.style] }),
      })),
    });
  }
  return blocks;
}

/** A reply's blocks: its text as mrkdwn sections (each ≤ 3000 characters) and its buttons. */
export function replyBlocks(markdown: string, buttons: ReplyButton[] = []): Block[] {
  const text = markdownToMrkdwn(markdown);
  const sections: Block[] = [];
  for (let i = 0; i < text.length || i === 0; i += LIMITS.sectionText)
    sections.push(section(text.slice(i, i + LIMITS.sectionText) || ' '));
  return [...sections, ...actions(buttons, 'countersign')].slice(0, LIMITS.blocks);
}

/** The approval card: one section per call, context, and Approve/Deny (per call and for all). */
export function approvalCardBlocks(card: ApprovalCard): Block[] {
  return replyBlocks(cardText(card), cardButtons(card));
}
