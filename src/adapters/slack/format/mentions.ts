import { revealDisguisedLinks } from './links.ts';
import { nearestFrom } from './scan.ts';

/**
 * Model output must never notify anyone Countersign did not choose to notify. Slack notifies on
 * `<!channel>`, `<!here>`, `<!everyone>`, `<!subteam^ID>` (user groups) and `<@U…>` / `<@W…>`
 * (users), and — when a message is sent with `link_names` or by some clients' parsers — on bare
 * `@channel`, `@here`, `@everyone`. Each becomes plain text: an `@`, a zero-width space, then the
 * name, which reads the same but is no mention.
 */

/** U+200B: invisible, and breaks Slack's recognition of a mention token. */
const ZERO_WIDTH_SPACE = '\u200B';

export interface MentionPolicy {
  /** Users the message may ping (for example, the person who asked). Everyone else is shown, not pinged. */
  allowedUserIds?: readonly string[];
}

/**
 * Slack's angle-bracket control sequences that notify — broadcasts, user groups, users — up to their
 * target; a `>` or a `|label>` completes one.
 */
const CONTROL_MENTION_START = /<(!(?:channel|here|everyone|group)|!subteam\^[A-Z0-9]+|@[UW][A-Z0-9]+)/gi;
/** The same sequences after `<`/`>` were escaped — harmless, but render them consistently. */
const BARE_BROADCAST = /(^|[^\w@])@(channel|here|everyone)\b/gi;

export function neutralizeMentions(text: string, policy: MentionPolicy = {}): string {
  const allowed = new Set(policy.allowedUserIds ?? []);
  const withoutTokens = replaceControlMentions(text, (token, target, label) => {
    if (target.startsWith('@') && allowed.has(target.slice(1).toUpperCase()) && label === undefined) return token;
    return `@${ZERO_WIDTH_SPACE}${readableName(target, label)}`;
  });
  return withoutTokens.replace(
    BARE_BROADCAST,
    (_m, before: string, name: string) => `${before}@${ZERO_WIDTH_SPACE}${name}`,
  );
}

/**
 * Each `<target>` or `<target|label>` replaced. The label runs to the next `>`, read from a table:
 * searching for it from every `<target|` would be quadratic in a text with many and no `>`.
 */
function replaceControlMentions(
  text: string,
  replace: (token: string, target: string, label: string | undefined) => string,
): string {
  if (!text.includes('<')) return text;
  const nextGt = nearestFrom(text.length, (i) => text[i] === '>');
  let out = '';
  let from = 0;
  for (const start of text.matchAll(CONTROL_MENTION_START)) {
    if (start.index < from) continue;
    const targetEnd = start.index + start[0].length;
    const labelled = text[targetEnd] === '|';
    const end = labelled ? nextGt[targetEnd + 1]! : targetEnd;
    if (text[end] !== '>') continue;
    const label = labelled ? text.slice(targetEnd + 1, end) : undefined;
    out += text.slice(from, start.index) + replace(text.slice(start.index, end + 1), start[1]!, label);
    from = end + 1;
  }
  return out + text.slice(from);
}

function readableName(target: string, label: string | undefined): string {
  const shown = label?.replace(/^@/, '').trim();
  if (shown) return shown;
  if (target.startsWith('!subteam^')) return 'subteam';
  return target.replace(/^[!@]/, '');
}

/**
 * The same guarantee for Markdown sent to Slack's streaming methods, where text goes out in pieces
 * and cannot be corrected afterwards: a zero-width space after every `<` that opens `<!…>` or
 * `<@…>`, and after the `@` of a broadcast name. The change never depends on text after the next
 * whitespace, so pieces cut at whitespace neutralize exactly as the whole text would. Links whose
 * text reads as another address show their real target too (links.ts), as they do in edits.
 */
export function neutralizeMarkdownMentions(text: string): string {
  return revealDisguisedLinks(text)
    .replace(/<(?=[!@])/g, `<${ZERO_WIDTH_SPACE}`)
    .replace(/@(?=(?:channel|here|everyone))/gi, `@${ZERO_WIDTH_SPACE}`);
}
