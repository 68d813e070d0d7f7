/**
 * A unified diff (as `diff -u` writes it) of two texts, line by line, from a longest-common-
 * subsequence table. Approval cards show it for edits; texts are capped upstream (1 MiB), and the
 * table is only built for the changed middle (common head and tail are trimmed first).
 */
export function unifiedDiff(oldText: string, newText: string, fromName: string, toName: string, context = 3): string {
  if (oldText === newText) return '';
  const a = splitLines(oldText);
  const b = splitLines(newText);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  if (am.length * bm.length > 4_000_000) {
    return `--- ${fromName}\n+++ ${toName}\n(the change is too large to show line by line: ${a.length} → ${b.length} lines)`;
  }
  // lcs[i][j] = length of the LCS of am[i..] and bm[j..]
  const lcs: Uint32Array[] = Array.from({ length: am.length + 1 }, () => new Uint32Array(bm.length + 1));
  for (let i = am.length - 1; i >= 0; i--) {
    for (let j = bm.length - 1; j >= 0; j--) {
      lcs[i]![j] = am[i] === bm[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  type Op = { kind: ' ' | '-' | '+'; line: string; a: number; b: number };
  const ops: Op[] = [];
  for (let k = 0; k < head; k++) ops.push({ kind: ' ', line: a[k]!, a: k, b: k });
  let i = 0;
  let j = 0;
  while (i < am.length || j < bm.length) {
    if (i < am.length && j < bm.length && am[i] === bm[j]) {
      ops.push({ kind: ' ', line: am[i]!, a: head + i, b: head + j });
      i++;
      j++;
    } else if (i < am.length && (j === bm.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      // Deletions before insertions, as diff -u prints them.
      ops.push({ kind: '-', line: am[i]!, a: head + i, b: head + j });
      i++;
    } else {
      ops.push({ kind: '+', line: bm[j]!, a: head + i, b: head + j });
      j++;
    }
  }
  for (let k = 0; k < tail; k++) {
    ops.push({ kind: ' ', line: a[a.length - tail + k]!, a: a.length - tail + k, b: b.length - tail + k });
  }
  // Group changes into hunks with `context` lines around them.
  const out = [`--- ${fromName}`, `+++ ${toName}`];
  let k = 0;
  while (k < ops.length) {
    while (k < ops.length && ops[k]!.kind === ' ') k++;
    if (k >= ops.length) break;
    const start = Math.max(0, k - context);
    let end = k;
    for (;;) {
      while (end < ops.length && ops[end]!.kind !== ' ') end++;
      let next = end;
      while (next < ops.length && ops[next]!.kind === ' ') next++;
      if (next < ops.length && next - end <= context * 2) end = next;
      else break;
    }
    const stop = Math.min(ops.length, end + context);
    const hunk = ops.slice(start, stop);
    const aCount = hunk.filter((o) => o.kind !== '+').length;
    const bCount = hunk.filter((o) => o.kind !== '-').length;
    const aStart = aCount ? hunk.find((o) => o.kind !== '+')!.a + 1 : hunk[0]!.a;
    const bStart = bCount ? hunk.find((o) => o.kind !== '-')!.b + 1 : hunk[0]!.b;
    out.push(`@@ -${aStart},${aCount} +${bStart},${bCount} @@`);
    for (const o of hunk) out.push(`${o.kind}${o.line}`);
    k = stop;
  }
  return out.join('\n');
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
