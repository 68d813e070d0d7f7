import type { ApprovalCard } from '../../core/approval-card.ts';
import type { CallDecision } from '../../core/work-item.ts';

/**
 * A decision typed at the prompt. `always`: the person chose "Always allow here" for the call, which
 * the console sends as that button's click, so the grant is made exactly as a click on Slack makes it.
 */
export type PromptDecision = CallDecision & { always?: true };

/** Whether the card offers "Always allow here" for call `index` (the policy lets it become a grant). */
const grantable = (card: ApprovalCard, index: number) => card.calls[index]?.grant !== undefined;

/**
 * Reads a person's answer to a card: y/n for all calls, `a` to always allow here (every call must
 * offer it), one y/n/a letter per call ("yna"), or for a question the option's number. Returns
 * undefined when the answer doesn't fit the card (an `a` for a call that offers no grant among them).
 */
export function parseCardAnswer(card: ApprovalCard, answer: string): PromptDecision[] | undefined {
  const text = answer.trim().toLowerCase();
  if (card.kind === 'question') {
    const options = card.options ?? [];
    const byNumber = Number(text);
    const chosen = Number.isInteger(byNumber) ? options[byNumber - 1] : options.find((o) => o.toLowerCase() === text);
    const call = card.calls[0];
    return chosen !== undefined && call ? [{ toolCallId: call.id, approved: true, answer: chosen }] : undefined;
  }
  const all = /^(y|yes|approve)$/.test(text)
    ? 'y'
    : /^(n|no|d|deny)$/.test(text)
      ? 'n'
      : /^(a|always)$/.test(text)
        ? 'a'
        : '';
  const letters = all ? all.repeat(card.calls.length) : text;
  if (!new RegExp(`^[yna]{${card.calls.length}}$`).test(letters)) return undefined;
  if ([...letters].some((letter, i) => letter === 'a' && !grantable(card, i))) return undefined;
  return card.calls.map((c, i) => ({
    toolCallId: c.id,
    approved: letters[i] !== 'n',
    ...(letters[i] === 'a' ? { always: true as const } : {}),
  }));
}

/** `n because …` (or `no: …`) denies every call with that reason; undefined for any other answer. */
export function denialReason(card: ApprovalCard, answer: string): string | undefined {
  if (card.kind === 'question') return undefined;
  const match = /^(?:n|no|d|deny)\b[\s:,-]+(.+)$/i.exec(answer.trim());
  return match?.[1]?.trim() || undefined;
}

/** `diff` at a change card's prompt: its Full diff button. */
export function asksFullDiff(card: ApprovalCard, answer: string): boolean {
  return card.change !== undefined && /^(diff|full diff)$/i.test(answer.trim());
}

/** What the prompt asks for while a card waits. */
export function cardPrompt(card: ApprovalCard): string {
  if (card.kind === 'question') return `answer with a number 1-${card.options?.length ?? 0}`;
  if (card.change)
    return `${card.change.approveLabel.toLowerCase()}? [y]es / [n]o: ${card.change.denyLabel.toLowerCase()} / n <reason> / diff: the full diff`;
  if (card.calls.length === 1) {
    return grantable(card, 0)
      ? 'approve? [y]es / [a]lways allow here / [n]o / n <reason>'
      : 'approve? [y]es / [n]o / n <reason>';
  }
  const offered = card.calls.filter((_, i) => grantable(card, i)).map((c) => c.index + 1);
  // One letter per call: y and n taking turns, a where "Always allow here" is offered.
  const example = card.calls.map((_, i) => (grantable(card, i) ? 'a' : i % 2 ? 'n' : 'y')).join('');
  const always =
    offered.length === 0
      ? ''
      : offered.length === card.calls.length
        ? ' / [a]lways allow all here'
        : ` / a for always allowing ${offered.length === 1 ? 'call' : 'calls'} ${offered.join(', ')} here`;
  return `approve? [y] all / [n] none${always} / n <reason> / one letter per call, e.g. ${example}`;
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
    return `Input ended before the agent's question was answered ("${card.question ?? ''}"); the question was withdrawn and nothing more was done.\n`;
  }
  const lines = undecidedCalls(card).map((c) => {
    const args = c.argsPretty.replace(/\s+/g, ' ');
    return `  ${c.index + 1}. ${c.tool} ${args.length > NOTICE_ARGS_CHARS ? `${args.slice(0, NOTICE_ARGS_CHARS - 1)}…` : args}`;
  });
  return `Input ended while an approval card waited; these calls were not approved and did not run:\n${lines.join('\n')}\n`;
}
