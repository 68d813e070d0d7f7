/**
 * Keeps a tool result within the model's budget. Tokens are estimated at 4 characters each (close
 * for English and code with both providers' tokenizers, and cheap). Over budget, the beginning and
 * the end are kept, and the identifiers found in the cut middle (URLs, UUIDs, ids, emails, keys,
 * paths) are listed, so the model can still refer to what it can't see.
 */
export const CHARS_PER_TOKEN = 4;

const IDENTIFIERS: RegExp[] = [
  /\bhttps?:\/\/[^\s"'<>()]+/g,
  /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi,
  /\b[\w.+-]+@[\w-]+\.[\w.-]+\b/g,
  /\b[A-Z][A-Z0-9]{1,9}-\d+\b/g, // ticket keys (JIRA, Linear)
  /\b[0-9a-f]{7,40}\b/g, // commit and object ids
  /(?:^|\s)((?:\.{0,2}\/)?(?:[\w.-]+\/)+[\w.-]+\.\w+)/g, // file paths
  /\b[a-z0-9]+(?:-[a-z0-9]+){2,}\b/g, // k8s-style names
];

export function fitToBudget(text: string, maxTokens = 25_000): string {
  const maxChars = maxTokens * CHARS_PER_TOKEN;
  if (text.length <= maxChars) return text;
  const middleStart = Math.floor(maxChars * 0.45);
  const middleEnd = text.length - Math.floor(maxChars * 0.45);
  const middle = text.slice(middleStart, middleEnd);
  const found = new Set<string>();
  const budgetForIds = Math.floor(maxChars * 0.08);
  let used = 0;
  for (const pattern of IDENTIFIERS) {
    for (const match of middle.matchAll(pattern)) {
      const id = (match[1] ?? match[0]).trim();
      if (found.has(id) || used + id.length + 2 > budgetForIds) continue;
      found.add(id);
      used += id.length + 2;
    }
  }
  const note =
    `\n\n[… cut ${middle.length} of ${text.length} characters to fit the ${maxTokens}-token budget.` +
    (found.size ? ` Identifiers from the cut part: ${[...found].join(', ')}` : '') +
    ' …]\n\n';
  return text.slice(0, middleStart) + note + text.slice(middleEnd);
}
