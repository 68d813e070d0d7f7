/**
 * Model Markdown → Slack mrkdwn. Code spans and fenced blocks pass through untouched; elsewhere
 * `&`, `<` and `>` are escaped, which also means model text can never form `<!channel>`,
 * `<!here>`, `<!everyone>`, `<!subteam^…>` or `<@U…>`: nothing it writes can ping anyone.
 */
export function markdownToMrkdwn(markdown: string): string {
  const out: string[] = [];
  let inFence = false;
  for (const line of markdown.split('\n')) {
    const fence = /^\s*(```|~~~)/.exec(line);
    if (fence) {
      inFence = !inFence;
      // Slack fences take no language tag.
      out.push(inFence ? '```' : '```');
      continue;
    }
    out.push(inFence ? line : convertLine(line));
  }
  return out.join('\n');
}

function escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function convertLine(line: string): string {
  // Split out code spans, convert the rest.
  return line
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : convertText(part)))
    .join('');
}

function convertText(text: string): string {
  const heading = /^(#{1,6})\s+(.*)$/.exec(text);
  if (heading) return `*${convertInline(heading[2] ?? '')}*`;
  const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(text);
  if (bullet) return `${bullet[1]}• ${convertInline(bullet[2] ?? '')}`;
  return convertInline(text);
}

function convertInline(text: string): string {
  const links: string[] = [];
  // Links first, so their URLs are not touched by the emphasis rules.
  let s = text.replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g, (_m, label: string, url: string) => {
    links.push(`<${url.replaceAll('>', '%3E').replaceAll('|', '%7C')}|${escape(label)}>`);
    return `\uE000${links.length - 1}\uE000`;
  });
  s = escape(s);
  s = s.replace(/\*\*(.+?)\*\*/g, '\uE001$1\uE001').replace(/__(.+?)__/g, '\uE001$1\uE001');
  s = s.replace(/(^|[^*\w])\*(?!\s)([^*]+?)\*(?!\w)/g, '$1_$2_');
  s = s.replace(/~~(.+?)~~/g, '~$1~');
  s = s.replaceAll('\uE001', '*');
  return s.replace(/\uE000(\d+)\uE000/g, (_m, i: string) => links[Number(i)] ?? '');
}
