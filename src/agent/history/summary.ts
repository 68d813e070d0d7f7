import { z } from 'zod';
import type { Message } from '../messages.ts';
import { estimateTokens } from './estimate.ts';

/**
 * What compaction keeps of the turns it replaces: per turn, what was asked, each tool call with its
 * arguments and how it ended (ran, failed, denied, approved), and the answer's opening; across all
 * of them, the identifiers that were mentioned. It is extracted, not written by a model: it costs no
 * model call, cannot invent anything, and the same messages always give the same bytes — which is
 * what keeps the cached prompt prefix valid until the next compaction.
 */
const SummaryTurn = z.object({
  asked: z.string(),
  calls: z.array(z.object({ tool: z.string(), args: z.string(), outcome: z.string() })),
  answered: z.string().optional(),
});
type SummaryTurn = z.infer<typeof SummaryTurn>;

export const ConversationSummary = z.object({
  version: z.literal(1),
  /** Turns kept in detail, oldest first. */
  turns: z.array(SummaryTurn),
  /** Turns whose detail was dropped to keep the summary bounded (their identifiers stay in `facts`). */
  droppedTurns: z.number().int().min(0),
  /** Identifiers mentioned anywhere in the compacted turns (ids, names, versions, urls), first seen first. */
  facts: z.array(z.string()),
  /** Every call a person approved or denied, and every call the policy refused, oldest first. */
  decisions: z.array(z.string()),
  /** Messages compacted into this summary, in all. */
  messages: z.number().int().min(0),
});
export type ConversationSummary = z.infer<typeof ConversationSummary>;

const SUMMARY_LIMITS = {
  askedChars: 300,
  argsChars: 200,
  outcomeChars: 200,
  answeredChars: 400,
  /** Turns kept in detail; older ones keep only their identifiers. */
  turns: 40,
  facts: 300,
  decisions: 200,
  factChars: 120,
} as const;

/** The outcome texts the loop writes for calls that did not run (see loop.ts). */
const NOT_RUN = [
  /^This call was not run: (.*)$/s,
  /^A person denied this call, so it was not run\./,
  /^The policy does not allow this call \(rule ([^)]*)\)/,
];

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/**
 * Identifier-like words: anything with a digit, a dot, a slash, a colon, an @ or a # joined to
 * letters (i-0abc123, v2.3.1, PR #1234, billing-api/prod, https://…, @alice, 10.0.0.7), and words in
 * backticks. Plain words are left to the turn lines.
 */
export function identifiersIn(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(/`([^`\n]{2,120})`/g)) found.add(m[1]!.trim());
  for (const m of text.matchAll(/(?:https?:\/\/[^\s)>\]"']+|[#@]?[A-Za-z0-9][\w.:/#@-]*[\w/])/g)) {
    const word = m[0];
    if (word.length < 3 || word.length > SUMMARY_LIMITS.factChars) continue;
    const hasDigit = /\d/.test(word);
    const joined = /[A-Za-z]/.test(word) && /[.:/#@_-]/.test(word) && !/^[A-Za-z]+[.:]$/.test(word);
    if ((hasDigit && /[A-Za-z#]/.test(word)) || joined || /^\d+(?:\.\d+){1,3}$/.test(word)) found.add(word);
  }
  return [...found];
}

function outcomeOf(content: string, isError: boolean, decision: string | undefined): string {
  for (const pattern of NOT_RUN) {
    const m = content.match(pattern);
    if (m) return clip(`not run — ${m[1] ? m[1] : 'denied by a person'}`, SUMMARY_LIMITS.outcomeChars);
  }
  const head = decision === 'approved' ? 'approved, ran' : isError ? 'failed' : 'ran';
  return clip(`${head}: ${content}`, SUMMARY_LIMITS.outcomeChars);
}

/** Splits compacted messages into turns: each starts at a user message. */
function turnsOf(messages: Message[]): SummaryTurn[] {
  const turns: SummaryTurn[] = [];
  const pending = new Map<string, { tool: string; args: string; outcome: string }>();
  let turn: SummaryTurn | undefined;
  for (const m of messages) {
    if (m.role === 'user') {
      // Several user messages in a row (a steered turn) belong to one request.
      if (turn && turn.calls.length === 0 && turn.answered === undefined) {
        turn.asked = clip(`${turn.asked} / ${m.text}`, SUMMARY_LIMITS.askedChars);
        continue;
      }
      turn = { asked: clip(m.text, SUMMARY_LIMITS.askedChars), calls: [] };
      turns.push(turn);
      continue;
    }
    turn ??= (turns.push({ asked: '(earlier)', calls: [] }), turns.at(-1)!);
    if (m.role === 'assistant') {
      if (m.text.trim()) turn.answered = clip(m.text, SUMMARY_LIMITS.answeredChars);
      for (const call of m.toolCalls) {
        const entry = {
          tool: call.name,
          args: clip(JSON.stringify(call.args), SUMMARY_LIMITS.argsChars),
          outcome: 'no result',
        };
        turn.calls.push(entry);
        pending.set(call.id, entry);
      }
    } else {
      for (const r of m.results) {
        const entry = pending.get(r.toolCallId);
        if (entry) entry.outcome = outcomeOf(r.content, r.isError, r.decision);
      }
    }
  }
  return turns;
}

/**
 * The summary after compacting `messages` on top of `previous` (whose turns are kept as they were).
 * Past `maxTokens`, the oldest turns lose their detail (their identifiers stay), then the oldest
 * identifiers go.
 */
export function summarize(
  previous: ConversationSummary | undefined,
  messages: Message[],
  maxTokens = Number.POSITIVE_INFINITY,
): ConversationSummary {
  const facts = new Set(previous?.facts ?? []);
  for (const m of messages) {
    const texts =
      m.role === 'user'
        ? [m.text]
        : m.role === 'assistant'
          ? [m.text, ...m.toolCalls.map((c) => JSON.stringify(c.args))]
          : m.results.map((r) => r.content);
    for (const text of texts) for (const id of identifiersIn(text)) facts.add(id);
  }
  const compacted = turnsOf(messages);
  const decisions = [
    ...(previous?.decisions ?? []),
    ...compacted.flatMap((t) =>
      t.calls.filter((c) => /^(approved|not run)/.test(c.outcome)).map((c) => `${c.tool} ${c.args} → ${c.outcome}`),
    ),
  ];
  const turns = [...(previous?.turns ?? []), ...compacted];
  const dropped = Math.max(0, turns.length - SUMMARY_LIMITS.turns);
  // The newest identifiers win when there are too many: they are likelier to be asked about.
  const factList = [...facts];
  const summary: ConversationSummary = {
    version: 1,
    turns: turns.slice(dropped),
    droppedTurns: (previous?.droppedTurns ?? 0) + dropped,
    facts: factList.slice(Math.max(0, factList.length - SUMMARY_LIMITS.facts)),
    decisions: decisions.slice(Math.max(0, decisions.length - SUMMARY_LIMITS.decisions)),
    messages: (previous?.messages ?? 0) + messages.length,
  };
  while (summary.turns.length > 1 && estimateTokens(renderSummary(summary)) > maxTokens) {
    summary.turns.shift();
    summary.droppedTurns += 1;
  }
  // Decisions go last: what a person allowed or refused is what a later turn most needs to respect.
  for (const list of [summary.facts, summary.decisions]) {
    while (list.length > 0 && estimateTokens(renderSummary(summary)) > maxTokens) {
      list.splice(0, Math.max(1, Math.floor(list.length / 4)));
    }
  }
  return summary;
}

/** The summary as the model reads it: the first message of the history. Same summary, same bytes. */
export function renderSummary(summary: ConversationSummary): string {
  const lines = [
    `[Earlier in this conversation — ${summary.messages} messages were compacted into this summary. Tool results are shortened; ask again or re-run a read-only tool if you need the full text.]`,
  ];
  if (summary.droppedTurns > 0)
    lines.push(`(${summary.droppedTurns} older turns are summarised only by the identifiers below.)`);
  summary.turns.forEach((t, i) => {
    lines.push(`Turn ${summary.droppedTurns + i + 1} — asked: ${t.asked}`);
    for (const c of t.calls) lines.push(`  - ${c.tool} ${c.args} → ${c.outcome}`);
    if (t.answered) lines.push(`  answered: ${t.answered}`);
  });
  if (summary.decisions.length) {
    lines.push('Calls decided by people or refused by the policy:');
    for (const d of summary.decisions) lines.push(`  - ${d}`);
  }
  if (summary.facts.length) lines.push(`Identifiers mentioned: ${summary.facts.join(', ')}`);
  return lines.join('\n');
}
