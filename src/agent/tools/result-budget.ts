/**
 * Keeps a tool result within the model's budget. Tokens are estimated at 4 characters each: close
 * enough for English, logs and code with both providers' tokenizers, and free to compute. A result
 * over budget keeps its beginning and its end (where headers, totals and errors usually are), and
 * the identifiers found in the cut middle are listed, so the model can still name the pod, ticket
 * or URL it can no longer see — and fetch it with a narrower call.
 */
export const CHARS_PER_TOKEN = 4;

/** TOOL_RESULT_MAX_TOKENS' default. */
export const DEFAULT_RESULT_MAX_TOKENS = 25_000;

const RESULT_BUDGET = {
  defaultMaxTokens: DEFAULT_RESULT_MAX_TOKENS,
  /** Share of the budget spent on listing identifiers from the cut part. */
  identifierShare: 0.1,
  /** A cut moves to a line break when one is this close, so kept lines stay whole. */
  lineSnapChars: 2_000,
} as const;

export interface BudgetOptions {
  maxTokens?: number;
}

/**
 * The kinds of identifier worth keeping, most useful first: when there are more than the budget
 * holds, earlier kinds win. One alternation, so each stretch of text is claimed once, by the
 * earliest matching kind (a URL's host is not listed again as a name).
 *
 * The scan must stay linear in the text: results are megabytes, and the model chooses what they
 * contain. A kind that scans a run of characters forward from a word boundary (email, the second
 * path form, k8s) was tried again from every boundary inside that run, failing each time only after
 * scanning to the run's end: 200 KB of `a-a-a-…` took 30 s. Each of them fails from a later
 * boundary of the run wherever it fails from the first one (it scans to the same end; k8s bar
 * double dashes), so the lookbehind `(?<=(?:^|[^…])[…]*)` lets them start only at the run's first
 * word boundary; it looks back over punctuation only, so it costs O(1) per position. The one
 * difference: once another kind's match ends inside such a run, these kinds are not tried in the
 * rest of it (`deadbee1-x-y-z2` yields `deadbee1`, not also the fragment `x-y-z2`).
 */
const IDENTIFIER_KINDS: Array<[kind: string, pattern: string]> = [
  ['url', String.raw`\b(?:https?|wss?|s3|gs|ftp)://[^\s"'<>()\[\]{}|\\^\x60]+[^\s"'<>()\[\]{}|\\^\x60.,;:!?]`],
  ['email', String.raw`\b(?<=(?:^|[^\w.+-])[.+-]*)[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b`],
  ['uuid', String.raw`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`],
  ['ticket', String.raw`\b[A-Z][A-Z0-9]{1,9}-\d{1,7}\b`],
  // Both a digit and a letter, so plain numbers and words spelled with a–f are not taken for ids.
  ['hex', String.raw`\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,64}\b`],
  [
    'path',
    String.raw`(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?|\b(?<=(?:^|[^\w.-])[.-]*)[\w.-]+(?:/[\w.@+-]+)+\.[A-Za-z0-9]{1,8}\b`,
  ],
  // Kubernetes-style names: pods, deployments, nodes (three or more dash-joined parts, one with a digit).
  ['k8s', String.raw`\b(?<=(?:^|[^a-z0-9-])-*)(?=[a-z0-9-]*\d)[a-z0-9]+(?:-[a-z0-9]+){2,}(?:\.[a-z0-9-]+)*\b`],
];
// One plain capturing group per kind (the patterns capture nothing themselves): group i + 1 is set
// when kind i matched. Cheaper than named groups, whose object is built for every match.
const IDENTIFIER = new RegExp(IDENTIFIER_KINDS.map(([, p]) => `(${p})`).join('|'), 'g');

/** Identifiers in `text`, deduplicated, in order of usefulness then first appearance. */
export function findIdentifiers(text: string): string[] {
  const seen = new Map<string, number>();
  for (const match of text.matchAll(IDENTIFIER)) {
    if (seen.has(match[0])) continue;
    let rank = 0;
    while (rank < IDENTIFIER_KINDS.length - 1 && match[rank + 1] === undefined) rank++;
    seen.set(match[0], rank);
  }
  // Array sort is stable: equal ranks keep their order of appearance.
  return [...seen.entries()].sort((x, y) => x[1] - y[1]).map(([id]) => id);
}

/** Moves a cut to a nearby line start (head backwards, tail forwards), never splitting a surrogate pair. */
function snap(text: string, at: number, direction: 'back' | 'forward'): number {
  const lineStart =
    direction === 'back' ? text.lastIndexOf('\n', at - 1) + 1 : text.indexOf('\n', Math.max(0, at - 1)) + 1;
  if (lineStart > 0 && Math.abs(lineStart - at) <= RESULT_BUDGET.lineSnapChars) return lineStart;
  const code = text.charCodeAt(at - 1);
  const splitsPair = code >= 0xd800 && code <= 0xdbff;
  return splitsPair ? (direction === 'back' ? at - 1 : at + 1) : at;
}

/**
 * Returns `text` unchanged when it fits `maxTokens` (estimated), otherwise its beginning and end
 * with a note in place of the middle: "[cut N of M characters to fit the budget; identifiers from
 * the cut part: …]". The result never exceeds the budget.
 */
export function fitToBudget(text: string, options: BudgetOptions | number = {}): string {
  const maxTokens = (typeof options === 'number' ? options : options.maxTokens) ?? RESULT_BUDGET.defaultMaxTokens;
  const maxChars = maxTokens * CHARS_PER_TOKEN;
  if (text.length <= maxChars) return text;

  const idChars = Math.floor(maxChars * RESULT_BUDGET.identifierShare);
  const noteReserve = 200; // the note's fixed words and numbers
  const keep = Math.max(0, maxChars - idChars - noteReserve);
  const headEnd = snap(text, Math.floor(keep / 2), 'back');
  const tailStart = snap(text, text.length - Math.ceil(keep / 2), 'forward');
  const middle = text.slice(headEnd, tailStart);

  const listed: string[] = [];
  let used = 0;
  let omitted = 0;
  for (const id of findIdentifiers(middle)) {
    if (used + id.length + 2 > idChars) {
      omitted++;
      continue;
    }
    listed.push(id);
    used += id.length + 2;
  }
  const ids = listed.length
    ? `; identifiers from the cut part: ${listed.join(', ')}${omitted ? ` (and ${omitted} more)` : ''}`
    : '';
  const head = text.slice(0, headEnd);
  const note = `${head.endsWith('\n') ? '' : '\n'}[cut ${middle.length} of ${text.length} characters to fit the budget${ids}]\n`;
  return head + note + text.slice(tailStart);
}
