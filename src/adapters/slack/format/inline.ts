/**
 * Inline spans of one line of Markdown → mrkdwn: code spans, allowed mentions, links and autolinks
 * first (kept aside in slots, so later rules leave them alone), then `&`, `<`, `>` escaped, then
 * emphasis, then backslash escapes. Each step is one linear walk (scan.ts): a crafted line of any
 * length converts in time proportional to its length.
 */
import { disguisesTarget } from './links.ts';
import type { MentionPolicy } from './mentions.ts';
import { isSpace, isWord, nearestFrom, runLength } from './scan.ts';

// Private-use characters mark spans already converted; markdownToMrkdwn removes them from its input.
const SLOT = '\uE000';
const BOLD = '\uE001';
const SLOT_REF = /\uE000(\d+)\uE000/g;

export function escapeMrkdwn(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** Converted spans, each with the Markdown it came from (a link's label shows code as written). */
class Slots {
  readonly #shown: string[] = [];
  readonly #written: string[] = [];

  keep(shown: string, written: string): string {
    this.#shown.push(shown);
    this.#written.push(written);
    return `${SLOT}${this.#shown.length - 1}${SLOT}`;
  }

  restore(text: string): string {
    return text.replace(SLOT_REF, (_m, i: string) => this.#shown[Number(i)] ?? '');
  }

  asWritten(text: string): string {
    return text.replace(SLOT_REF, (_m, i: string) => this.#written[Number(i)] ?? '');
  }
}

export function convertInline(text: string, policy: MentionPolicy): string {
  const slots = new Slots();
  let s = codeSpans(text, slots);
  s = allowedMentions(s, policy, slots);
  s = links(s, slots);
  s = autolinks(s, slots);
  s = escapeMrkdwn(s);
  for (const rule of EMPHASIS) if (s.includes(rule.delimiter)) s = emphasis(s, rule);
  s = s.replaceAll(BOLD, '*');
  // Backslash escapes of punctuation become the plain character.
  s = s.replace(/\\([\\`*_{}[\]()#+\-.!~|])/g, '$1');
  return slots.restore(s);
}

/**
 * Code spans, as CommonMark defines them: a run of n backticks up to the next run of exactly n. A
 * run with no partner is literal. Runs are found once, and each run's partner read from a table.
 */
function codeSpans(text: string, slots: Slots): string {
  if (!text.includes('`')) return text;
  const runs: Array<{ start: number; length: number }> = [];
  for (let i = 0; i < text.length;) {
    const length = runLength(text, i, '`');
    if (length) runs.push({ start: i, length });
    i += length || 1;
  }
  const partner = new Int32Array(runs.length);
  const laterOfLength = new Map<number, number>();
  for (let k = runs.length - 1; k >= 0; k--) {
    partner[k] = laterOfLength.get(runs[k]!.length) ?? -1;
    laterOfLength.set(runs[k]!.length, k);
  }
  let out = '';
  let from = 0;
  for (let k = 0; k < runs.length; k++) {
    const close = partner[k]!;
    if (close < 0) continue;
    const open = runs[k]!;
    const end = runs[close]!.start + runs[close]!.length;
    const span = text.slice(open.start, end);
    out += text.slice(from, open.start) + slots.keep(escapeMrkdwn(span), span);
    from = end;
    k = close;
  }
  return out + text.slice(from);
}

/** `<@U…>` of a user the policy lets the message ping; any other is escaped like all text. */
function allowedMentions(s: string, policy: MentionPolicy, slots: Slots): string {
  const allowed = policy.allowedUserIds ?? [];
  if (!allowed.length) return s;
  // Linear: the id run cannot contain `<`, so no two attempts read the same characters.
  return s.replace(/<@([UW][A-Z0-9]+)>/g, (token, id: string) =>
    allowed.includes(id) ? slots.keep(token, token) : token,
  );
}

const SCHEMES = ['https://', 'http://', 'mailto:'];
const schemeAt = (s: string, i: number): number => SCHEMES.find((p) => s.startsWith(p, i))?.length ?? 0;

/**
 * `[label](url "title")` and `![alt](url)` with an http(s) or mailto URL. The label runs to the next
 * `]` (brackets are not balanced); the URL to the next whitespace, `)` or `>`.
 */
function links(s: string, slots: Slots): string {
  if (!s.includes('](')) return s;
  const n = s.length;
  const nextBracket = nearestFrom(n, (i) => s[i] === ']');
  const nextSolid = nearestFrom(n, (i) => !isSpace(s[i]));
  const nextUrlEnd = nearestFrom(n, (i) => isSpace(s[i]) || s[i] === ')' || s[i] === '>');
  const nextQuote = nearestFrom(n, (i) => s[i] === '"');
  let out = '';
  let from = 0;
  for (let open = s.indexOf('[', from); open >= 0; open = s.indexOf('[', open + 1)) {
    const close = nextBracket[open + 1]!;
    if (close >= n || s[close + 1] !== '(') continue;
    let i = nextSolid[close + 2]!;
    if (s[i] === '<') i++;
    const scheme = schemeAt(s, i);
    if (!scheme) continue;
    const urlEnd = nextUrlEnd[i + scheme]!;
    if (urlEnd === i + scheme) continue;
    let rest = s[urlEnd] === '>' ? urlEnd + 1 : urlEnd;
    // An optional title: whitespace, then "…".
    const titleStart = nextSolid[rest]!;
    if (titleStart > rest && s[titleStart] === '"' && nextQuote[titleStart + 1]! < n)
      rest = nextQuote[titleStart + 1]! + 1;
    const end = nextSolid[rest]!;
    if (s[end] !== ')') continue;
    const start = open - 1 >= from && s[open - 1] === '!' ? open - 1 : open;
    const markdown = s.slice(start, end + 1);
    out +=
      s.slice(from, start) + slots.keep(link(s.slice(i, urlEnd), slots.asWritten(s.slice(open + 1, close))), markdown);
    from = end + 1;
    open = end;
  }
  return out + s.slice(from);
}

/** `<https://…>`: the URL runs to the next whitespace or `>`, which must be a `>`. */
function autolinks(s: string, slots: Slots): string {
  if (!s.includes('<')) return s;
  const n = s.length;
  const nextUrlEnd = nearestFrom(n, (i) => isSpace(s[i]) || s[i] === '>');
  let out = '';
  let from = 0;
  for (let open = s.indexOf('<'); open >= 0; open = s.indexOf('<', open + 1)) {
    const scheme = schemeAt(s, open + 1);
    if (!scheme) continue;
    const end = nextUrlEnd[open + 1 + scheme]!;
    if (end === open + 1 + scheme || s[end] !== '>') continue;
    out += s.slice(from, open) + slots.keep(link(s.slice(open + 1, end), ''), s.slice(open, end + 1));
    from = end + 1;
    open = end;
  }
  return out + s.slice(from);
}

function link(url: string, label: string): string {
  // `|` and `>` end Slack's link syntax early; percent-encoding keeps the URL working.
  const safeUrl = url.replaceAll('&', '&amp;').replaceAll('<', '%3C').replaceAll('>', '%3E').replaceAll('|', '%7C');
  const text = escapeMrkdwn(label.replace(/[*_~`]/g, '')).trim();
  // Text that reads as another address is shown beside the real one, never as its disguise.
  if (text && disguisesTarget(label, url)) return `${text} (<${safeUrl}>)`;
  return text && text !== url ? `<${safeUrl}|${text}>` : `<${safeUrl}>`;
}

/**
 * One emphasis rule: an opener followed by a non-space, up to the nearest closer preceded by a
 * non-space, at least one character apart. `before`/`after` judge the character before the opener
 * and after the closer (undefined at the ends of the line).
 */
interface EmphasisRule {
  delimiter: string;
  before?: (c: string | undefined) => boolean;
  after?: (c: string | undefined) => boolean;
  /** The content may not contain the delimiter's character (single `*`). */
  plainContent?: boolean;
  wrap: (content: string) => string;
}

const bold = (content: string) => `${BOLD}${content}${BOLD}`;

/** In this order: `***` before `**` before `*`. `_x_` is already mrkdwn italic. */
const EMPHASIS: readonly EmphasisRule[] = [
  { delimiter: '***', wrap: (content) => `${BOLD}_${content}_${BOLD}` },
  { delimiter: '**', wrap: bold },
  // Not inside a word: snake_case_names stay as they are.
  { delimiter: '__', before: (c) => !isWord(c) && c !== '\\', after: (c) => !isWord(c), wrap: bold },
  {
    delimiter: '*',
    before: (c) => !isWord(c) && c !== '*' && c !== '\\',
    after: (c) => !isWord(c) && c !== '*',
    plainContent: true,
    wrap: (content) => `_${content}_`,
  },
  { delimiter: '~~', wrap: (content) => `~${content}~` },
];

function emphasis(s: string, rule: EmphasisRule): string {
  const { delimiter: d } = rule;
  const n = s.length;
  const closesAt = (c: number) => s.startsWith(d, c) && !isSpace(s[c - 1]) && (rule.after?.(s[c + d.length]) ?? true);
  const nextCloser = rule.plainContent ? nearestFrom(n, (i) => s[i] === d[0]) : nearestFrom(n, closesAt);
  let out = '';
  let from = 0;
  for (let i = from; i + d.length < n; i++) {
    if (!s.startsWith(d, i) || isSpace(s[i + d.length])) continue;
    // The character before the opener belongs to no earlier span (at the line's start there is none).
    if (rule.before && i > 0 && (i - 1 < from || !rule.before(s[i - 1]))) continue;
    const content = i + d.length;
    // Plain content ends at the next delimiter character, which must then close.
    const close = nextCloser[rule.plainContent ? content : content + 1]!;
    if (close >= n || close <= content || !closesAt(close)) continue;
    out += s.slice(from, i) + rule.wrap(s.slice(content, close));
    from = close + d.length;
    i = from - 1;
  }
  return out + s.slice(from);
}
