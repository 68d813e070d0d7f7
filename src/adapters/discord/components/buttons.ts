import type { ReplyButton } from '../../../core/reply-target.ts';
import { LIMITS } from '../limits.ts';
import { ButtonStyle, type ApiActionRow, type ApiButton } from './api-shapes.ts';
import { stopCustomId } from './custom-id.ts';

/** A label Discord accepts: at most 80 characters, never empty. */
export function buttonLabel(label: string): string {
  const clean = label.trim() || '…';
  return clean.length <= LIMITS.buttonLabel ? clean : `${clean.slice(0, LIMITS.buttonLabel - 1)}…`;
}

export function button(label: string, customId: string, style: ApiButton['style']): ApiButton {
  if (customId.length > LIMITS.customId) {
    throw new Error(`custom_id is ${customId.length} characters; Discord accepts at most ${LIMITS.customId}`);
  }
  return { type: 2, style, label: buttonLabel(label), custom_id: customId };
}

/** Packs buttons into action rows of at most five; more buttons than five rows hold is a bug upstream. */
export function actionRows(buttons: ApiButton[]): ApiActionRow[] {
  const max = LIMITS.buttonsPerRow * LIMITS.actionRows;
  if (buttons.length > max) {
    throw new Error(`${buttons.length} buttons do not fit on one Discord message (at most ${max})`);
  }
  const rows: ApiActionRow[] = [];
  for (let i = 0; i < buttons.length; i += LIMITS.buttonsPerRow) {
    rows.push({ type: 1, components: buttons.slice(i, i + LIMITS.buttonsPerRow) });
  }
  return rows;
}

/** The single-row Stop button shown under a reply while its turn runs. */
export function stopButtonRow(turnId: string): ApiActionRow[] {
  return [{ type: 1, components: [button('Stop', stopCustomId(turnId), ButtonStyle.danger)] }];
}

/** The platform-neutral buttons of `src/reply/outbound.ts` as Discord action rows. */
export function replyButtonRows(buttons: ReplyButton[]): ApiActionRow[] {
  return actionRows(
    buttons.flatMap((b) => {
      if (!b.url) return [button(b.label, b.value, ButtonStyle[b.style])];
      // A longer link is refused by Discord: the message's text carries it instead.
      return b.url.length <= LIMITS.linkButtonUrl ? [linkButton(b.label, b.url)] : [];
    }),
  );
}

/** A button that opens `url` (style Link): it has no custom_id, and Discord sends no interaction for it. */
function linkButton(label: string, url: string): ApiButton {
  return { type: 2, style: ButtonStyle.link, label: buttonLabel(label), url };
}
