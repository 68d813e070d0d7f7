import { disguisesTarget } from './links.ts';
/**
 * CommonMark (what models write) → Slack mrkdwn. Slack's dialect differs: `*bold*`, `_italic_`,
 * `~strike~`, `<url|label>` links, no headings, and `&`, `<`, `>` must be sent as entities
 * (docs.slack.dev "Formatting text for app surfaces"). Code spans and fenced blocks are never
 * restyled, but their `&`, `<`, `>` are escaped too: Slack parses `<…>` inside backticks as well
 * (`map<string,string>` shows as `mapstring,string`), and shows the entities as the characters.
 * The result is passed through neutralizeMentions, so whatever the model writes, nobody is pinged
 * unless allowed.
 */
import { neutralizeMentions, type MentionPolicy } from './mentions.ts';

// Private-use characters mark spans already converted, so later rules leave them alone.
const SLOT = '\uE000';
const BOLD = '\uE001';
const PLACEHOLDERS = /[\uE000-\uE001]/g;

export function escapeMrkdwn(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

export function markdownToMrkdwn(markdown: string, policy: MentionPolicy = {}): string {
  const lines = markdown.replace(PLACEHOLDERS, '').replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let fence: { marker: string; body: string[] } | undefined;
  for (const line of lines) {
    if (fence) {
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(line);
      if (close?.[1] && close[1][0] === fence.marker[0] && close[1].length >= fence.marker.length) {
        out.push(codeBlock(fence.body));
        fence = undefined;
      } else fence.body.push(line);
      continue;
    }
    const open = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    // A backtick fence's info string may not contain backticks (CommonMark); Slack takes no language.
    if (open?.[1] && !(open[1][0] === '`' && open[2]?.includes('`'))) {
      fence = { marker: open[1], body: [] };
      continue;
    }
    out.push(convertLine(line, policy));
  }
  // An unclosed fence runs to the end of the text, as in CommonMark.
  if (fence) out.push(codeBlock(fence.body));
  return neutralizeMentions(out.join('\n'), policy);
}

function codeBlock(body: string[]): string {
  return `\`\`\`\n${escapeMrkdwn(body.join('\n'))}\n\`\`\``;
}

function convertLine(line: string, policy: MentionPolicy): string {
  const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
  if (heading) {
    const text = inline(heading[1] ?? '', policy).replaceAll('*', '');
    return text ? `*${text}*` : '';
  }
  if (/^ {0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) return '──────────';
  const quote = /^ {0,3}(>\s?)+(.*)$/.exec(line);
  if (quote) return `> ${inline(quote[2] ?? '', policy)}`.trimEnd();
  const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(line);
  if (bullet) return `${bullet[1] ?? ''}• ${inline(bullet[2] ?? '', policy)}`;
  return inline(line, policy);
}

/** Inline spans of one line: code spans only escaped, everything else converted and escaped. */
function inline(text: string, policy: MentionPolicy): string {
  const slots: string[] = [];
  const keep = (converted: string) => {
    slots.push(converted);
    return `${SLOT}${slots.length - 1}${SLOT}`;
  };
  // Code spans: a run of n backticks closed by a run of exactly n.
  let s = text.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (span) => keep(escapeMrkdwn(span)));
  s = s.replace(/<@([UW][A-Z0-9]+)>/g, (token, id: string) =>
    (policy.allowedUserIds ?? []).includes(id) ? keep(token) : token,
  );
  s = s.replace(
    /!?\[([^\]]*)\]\(\s*<?((?:https?:\/\/|mailto:)[^\s)>]+)>?(?:\s+"[^"]*")?\s*\)/g,
    (_m, label: string, url: string) => keep(link(url, label)),
  );
  s = s.replace(/<((?:https?:\/\/|mailto:)[^\s>]+)>/g, (_m, url: string) => keep(link(url, '')));
  s = escapeMrkdwn(s);
  s = s.replace(/\*\*\*(?=\S)(.+?)(?<=\S)\*\*\*/g, `${BOLD}_$1_${BOLD}`);
  s = s.replace(/\*\*(?=\S)(.+?)(?<=\S)\*\*/g, `${BOLD}$1${BOLD}`);
  s = s.replace(/(^|[^\w\\])__(?=\S)(.+?)(?<=\S)__(?!\w)/g, `$1${BOLD}$2${BOLD}`);
  s = s.replace(/(^|[^\w*\\])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])/g, '$1_$2_');
  s = s.replace(/~~(?=\S)(.+?)(?<=\S)~~/g, '~$1~');
  s = s.replaceAll(BOLD, '*');
  // Backslash escapes of punctuation become the plain character.
  s = s.replace(/\\([\\`*_{}[\]()#+\-.!~|])/g, '$1');
  return s.replace(new RegExp(`${SLOT}(\\d+)${SLOT}`, 'g'), (_m, i: string) => slots[Number(i)] ?? '');
}

function link(url: string, label: string): string {
  // `|` and `>` end Slack's link syntax early; percent-encoding keeps the URL working.
  const safeUrl = url.replaceAll('&', '&amp;').replaceAll('<', '%3C').replaceAll('>', '%3E').replaceAll('|', '%7C');
  const text = escapeMrkdwn(label.replace(/[*_~`]/g, '')).trim();
  // Text that reads as another address is shown beside the real one, never as its disguise.
  if (text && disguisesTarget(label, url)) return `${text} (<${safeUrl}>)`;
  return text && text !== url ? `<${safeUrl}|${text}>` : `<${safeUrl}>`;
}
