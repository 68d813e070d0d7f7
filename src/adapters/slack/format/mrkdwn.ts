/**
 * CommonMark (what models write) → Slack mrkdwn. Slack's dialect differs: `*bold*`, `_italic_`,
 * `~strike~`, `<url|label>` links, no headings, and `&`, `<`, `>` must be sent as entities
 * (docs.slack.dev "Formatting text for app surfaces"). Code spans and fenced blocks are never
 * restyled, but their `&`, `<`, `>` are escaped too: Slack parses `<…>` inside backticks as well
 * (`map<string,string>` shows as `mapstring,string`), and shows the entities as the characters.
 * The result is passed through neutralizeMentions, so whatever the model writes, nobody is pinged
 * unless allowed.
 *
 * Linear in the text's length, whatever the text: lines are classified by reading their first
 * characters, and inline spans are converted by the single walks of inline.ts.
 */
import { convertInline, escapeMrkdwn } from './inline.ts';
import { neutralizeMentions, type MentionPolicy } from './mentions.ts';
import { isSpace, runLength } from './scan.ts';

/** The private-use characters inline.ts marks converted spans with; never taken from the input. */
const PLACEHOLDERS = /[\uE000-\uE001]/g;

export function markdownToMrkdwn(markdown: string, policy: MentionPolicy = {}): string {
  const lines = markdown.replace(PLACEHOLDERS, '').replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let fence: { marker: string; body: string[] } | undefined;
  for (const line of lines) {
    if (fence) {
      if (closesFence(line, fence.marker)) {
        out.push(codeBlock(fence.body));
        fence = undefined;
      } else fence.body.push(line);
      continue;
    }
    const marker = fenceOpenedBy(line);
    if (marker) {
      fence = { marker, body: [] };
      continue;
    }
    out.push(convertLine(line, policy));
  }
  // An unclosed fence runs to the end of the text, as in CommonMark.
  if (fence) out.push(codeBlock(fence.body));
  return neutralizeMentions(out.join('\n'), policy);
}

/**
 * The fence still open at the end of `markdown` (its marker, e.g. "```"), or undefined: a text cut
 * inside a fenced block is continued by opening the fence again.
 */
export function openFenceAtEnd(markdown: string): string | undefined {
  let marker: string | undefined;
  for (const line of markdown.replace(/\r\n?/g, '\n').split('\n')) {
    if (marker) {
      if (closesFence(line, marker)) marker = undefined;
    } else marker = fenceOpenedBy(line);
  }
  return marker;
}

function codeBlock(body: string[]): string {
  return `\`\`\`\n${escapeMrkdwn(body.join('\n'))}\n\`\`\``;
}

/** Up to three spaces of indentation, as CommonMark allows before block markers; -1 when more. */
function indentOf(line: string): number {
  const spaces = runLength(line, 0, ' ');
  return spaces <= 3 ? spaces : -1;
}

/** A fence's opening marker (``` or ~~~, three or more); a backtick fence's info string may not contain backticks. */
function fenceOpenedBy(line: string): string | undefined {
  const indent = indentOf(line);
  const char = line[indent];
  if (indent < 0 || (char !== '`' && char !== '~')) return undefined;
  const length = runLength(line, indent, char);
  if (length < 3) return undefined;
  if (char === '`' && line.includes('`', indent + length)) return undefined;
  return char.repeat(length);
}

/** A closing fence: the same character, at least as many, nothing after but whitespace. */
function closesFence(line: string, marker: string): boolean {
  const indent = indentOf(line);
  const char = line[indent];
  if (indent < 0 || !char || char !== marker[0]) return false;
  const length = runLength(line, indent, char);
  return length >= marker.length && line.slice(indent + length).trim() === '';
}

function convertLine(line: string, policy: MentionPolicy): string {
  const heading = headingText(line);
  if (heading !== undefined) {
    const text = convertInline(heading, policy).replaceAll('*', '');
    return text ? `*${text}*` : '';
  }
  if (isThematicBreak(line)) return '──────────';
  const quoted = quotedText(line);
  if (quoted !== undefined) return `> ${convertInline(quoted, policy)}`.trimEnd();
  const bullet = bulletOf(line);
  if (bullet) return `${bullet.indent}• ${convertInline(bullet.text, policy)}`;
  return convertInline(line, policy);
}

/** `# Title #`: one to six `#`, whitespace, the title; closing `#`s and surrounding whitespace dropped. */
function headingText(line: string): string | undefined {
  const indent = indentOf(line);
  if (indent < 0) return undefined;
  const hashes = runLength(line, indent, '#');
  if (hashes < 1 || hashes > 6 || !isSpace(line[indent + hashes])) return undefined;
  let end = line.trimEnd().length;
  while (end > indent + hashes && line[end - 1] === '#') end--;
  return line.slice(indent + hashes, end).trim();
}

/** `---`, `* * *`, `___`: three or more of one of `-*_`, with only whitespace between. */
function isThematicBreak(line: string): boolean {
  const indent = indentOf(line);
  const char = line[indent];
  if (indent < 0 || (char !== '-' && char !== '*' && char !== '_')) return false;
  let count = 0;
  for (let i = indent; i < line.length; i++) {
    if (line[i] === char) count++;
    else if (!isSpace(line[i])) return false;
  }
  return count >= 3;
}

/** `> text` and nested `>> text` (flattened): the text after the markers, each with one optional space. */
function quotedText(line: string): string | undefined {
  const indent = indentOf(line);
  if (indent < 0 || line[indent] !== '>') return undefined;
  let i = indent;
  while (line[i] === '>') {
    i++;
    if (isSpace(line[i])) i++;
  }
  return line.slice(i);
}

/** `- item`, `* item`, `+ item`, keeping the indentation of nested lists. */
function bulletOf(line: string): { indent: string; text: string } | undefined {
  let i = 0;
  while (isSpace(line[i])) i++;
  const marker = line[i];
  if ((marker !== '-' && marker !== '*' && marker !== '+') || !isSpace(line[i + 1])) return undefined;
  let text = i + 1;
  while (isSpace(line[text])) text++;
  return { indent: line.slice(0, i), text: line.slice(text) };
}
