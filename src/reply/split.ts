/**
 * Splits long replies into platform-sized messages at boundaries a reader won't notice: a blank
 * line, then a line break, then a space. A code block is never cut open: when a block alone is
 * longer than a message, it is closed at the cut and reopened (same language) in the next message.
 */

const FENCE = /^(\s*)(```+|~~~+)(.*)$/;

interface OpenFence {
  marker: string;
  info: string;
}

/** The fence left open at the end of `text`, if any. */
export function openFenceAt(text: string): OpenFence | undefined {
  let open: OpenFence | undefined;
  for (const line of text.split('\n')) {
    const m = FENCE.exec(line);
    if (!m) continue;
    const marker = m[2] ?? '```';
    if (!open) open = { marker, info: (m[3] ?? '').trim() };
    else if (marker.startsWith(open.marker[0] ?? '`') && marker.length >= open.marker.length && !(m[3] ?? '').trim())
      open = undefined;
  }
  return open;
}

function lastIndexOfAny(text: string, needle: string, limit: number): number {
  const at = text.lastIndexOf(needle, limit - needle.length);
  return at > 0 ? at + needle.length : -1;
}

/** The best cut position in `text` no later than `max`, or `max` itself when nothing better exists. */
function bestCut(text: string, max: number): number {
  const minUseful = Math.floor(max * 0.5);
  for (const boundary of ['\n\n', '\n', '. ', ' ']) {
    let at = lastIndexOfAny(text, boundary, max);
    // Don't cut just inside an opening fence line's info or leave a message nearly empty.
    while (at > minUseful) {
      const head = text.slice(0, at);
      if (!openFenceAt(head)) return at;
      at = lastIndexOfAny(text, boundary, at - 1);
    }
  }
  // Every nice boundary is inside a code block: cut at a line break inside it (the block is reopened).
  const nl = lastIndexOfAny(text, '\n', max);
  return nl > minUseful ? nl : max;
}

export interface Split {
  /** The first message, complete on its own. */
  head: string;
  /** How many characters of the input the first message covers. */
  consumed: number;
  /** What the next message must start with (a reopened code fence), or ''. */
  carry: string;
}

/** Cuts the first message (at most `max` characters) off `text`. */
export function splitOnce(text: string, max: number): Split {
  if (text.length <= max) return { head: text, consumed: text.length, carry: '' };
  // Leave room for a closing fence we may have to add.
  let cut = bestCut(text, max - 5);
  // Never split a surrogate pair.
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  const head = text.slice(0, cut);
  const fence = openFenceAt(head);
  if (fence) {
    return {
      head: `${head.replace(/\n?$/, '\n')}${fence.marker}`,
      consumed: cut,
      carry: `${fence.marker}${fence.info}\n`,
    };
  }
  return { head: head.replace(/\s+$/, ''), consumed: cut, carry: '' };
}

/** The rest of `text` after a split, as the next message starts. */
export function restAfter(text: string, split: Split): string {
  const rest = text.slice(split.consumed);
  return split.carry ? split.carry + rest.replace(/^\n/, '') : rest.replace(/^\s+/, '');
}

/** Splits `text` into messages of at most `max` characters each. */
export function splitMessage(text: string, max: number): string[] {
  if (max < 50) throw new Error(`A message limit of ${max} characters is too small to split safely`);
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const split = splitOnce(rest, max);
    parts.push(split.head);
    rest = restAfter(rest, split);
  }
  parts.push(rest);
  return parts;
}
