import path from 'node:path';

/** Longest name a received file is saved under, in characters (the extension included). */
const NAME_CHARS = 100;

/**
 * Characters a name must not carry into the workspace: controls (NUL first), direction overrides
 * and isolates (U+202E turns `gnp.exe` into what reads as `exe.png`), path separators of every
 * system, and characters shells and Windows treat specially.
 */
// Matching control characters is the point here.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff/\\:*?"<>|]/g;

/** A received file's name made safe to save: what it became, and whether that differs from what was sent. */
export interface SafeName {
  name: string;
  changed: boolean;
}

/**
 * The name a received file is saved under: only its last segment (`../../etc/passwd` → `passwd`),
 * unsafe characters replaced by `_`, no leading dots (no hidden files, never `.` or `..`), at most
 * NAME_CHARS characters with the extension kept. An empty result becomes `file`.
 */
export function safeFileName(sent: string): SafeName {
  const lastSegment = sent.split(/[/\\]/).at(-1) ?? '';
  let name = lastSegment
    .normalize('NFC')
    .replace(UNSAFE, '_')
    .replace(/^[.\s]+/, '')
    .trim();
  if (!name || /^_+$/.test(name)) name = 'file';
  name = shortened(name);
  return { name, changed: name !== sent };
}

function shortened(name: string): string {
  const chars = [...name];
  if (chars.length <= NAME_CHARS) return name;
  const ext = path.extname(name);
  const keep = ext.length > 0 && ext.length <= 16 ? ext : '';
  return [...name.slice(0, name.length - keep.length)].slice(0, NAME_CHARS - [...keep].length).join('') + keep;
}
