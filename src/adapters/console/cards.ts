import type { ApprovalCard } from '../../core/approval-card.ts';
import type { CallDecision } from '../../core/work-item.ts';

/**
 * Reads a person's answer to a card: y/n for all calls, one y/n letter per call ("yn"), or for a
 * question the option's number. Returns undefined when the answer doesn't fit the card.
 */
export function parseCardAnswer(card: ApprovalCard, answer: string): CallDecision[] | undefined {
  const text = answer.trim().toLowerCase();
  if (card.kind === 'question') {
    const options = card.options ?? [];
    const byNumber = Number(text);
    const chosen = Number.isInteger(byNumber) ? options[byNumber - 1] : options.find((o) => o.toLowerCase() === text);
    const call = card.calls[0];
    return chosen !== undefined && call ? [{ toolCallId: call.id, approved: true, answer: chosen }] : undefined;
  }
  const all = /^(y|yes|a|approve)$/.test(text) ? true : /^(n|no|d|deny)$/.test(text) ? false : undefined;
  if (all !== undefined) return card.calls.map((c) => ({ toolCallId: c.id, approved: all }));
  if (new RegExp(`^[yn]{${card.calls.length}}$`).test(text)) {
    return card.calls.map((c, i) => ({ toolCallId: c.id, approved: text[i] === 'y' }));
  }
  return undefined;
}

/** `n because …` (or `no: …`) denies every call with that reason; undefined for any other answer. */
export function denialReason(card: ApprovalCard, answer: string): string | undefined {
  if (card.kind === 'question') return undefined;
  const match = /^(?:n|no|d|deny)\b[\s:,-]+(.+)$/i.exec(answer.trim());
  return match?.[1]?.trim() || undefined;
}

/** What the prompt asks for while a card waits. */
export function cardPrompt(card: ApprovalCard): string {
  if (card.kind === 'question') return `answer with a number 1-${card.options?.length ?? 0}`;
  return card.calls.length === 1
    ? 'approve? [y]es / [n]o / n <reason>'
    : `approve? [y] all / [n] none / n <reason> / one letter per call, e.g. ${'yn'.repeat(card.calls.length).slice(0, card.calls.length)}`;
}

/** What a card still waits for: its calls nobody decided yet. */
function undecidedCalls(card: ApprovalCard): ApprovalCard['calls'] {
  const decided = new Set((card.decisions ?? []).map((d) => d.index));
  return card.calls.filter((c) => !decided.has(c.index));
}

/** Characters of a call's arguments the notice repeats: enough to tell calls apart on one line. */
const NOTICE_ARGS_CHARS = 200;

/** What the session says, on its way out, that it left undone. */
export function undecidedNotice(card: ApprovalCard): string {
  if (card.kind === 'question') {
    return `Input ended before the agent's question was answered ("${card.question ?? ''}"); the turn waits, nothing more was done.\n`;
  }
  const lines = undecidedCalls(card).map((c) => {
    const args = c.argsPretty.replace(/\s+/g, ' ');
    return `  ${c.index + 1}. ${c.tool} ${args.length > NOTICE_ARGS_CHARS ? `${args.slice(0, NOTICE_ARGS_CHARS - 1)}…` : args}`;
  });
  return `Input ended while an approval card waited; these calls were not approved and did not run:\n${lines.join('\n')}\n`;
}
