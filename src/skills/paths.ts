import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { LIMITS } from './limits.ts';

/** True when `child` is `parent` or lies beneath it. Both must already be absolute and normalised. */
export function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

export type ConfinedPath = { ok: true; path: string } | { ok: false; reason: string };

/**
 * Resolves a path the model asked for inside a skill folder. Each check closes one way out:
 * absolute paths, `..` segments, percent-encoded traversal (`%2e%2e/`) that a later layer might
 * decode, and symbolic links whose real target lies elsewhere.
 */
export async function confineToSkill(skillDir: string, requested: string): Promise<ConfinedPath> {
  if (requested.length === 0) return { ok: false, reason: 'the path is empty' };
  if (requested.length > LIMITS.resourcePathChars) {
    return {
      ok: false,
      reason: `the path is ${requested.length} characters long; the limit is ${LIMITS.resourcePathChars}`,
    };
  }
  if (requested.includes('\0')) return { ok: false, reason: 'the path contains a NUL character' };
  if (/%[0-9a-f]{2}/i.test(requested)) {
    return { ok: false, reason: 'percent-encoded paths are not accepted; write the path as plain text' };
  }
  if (
    path.isAbsolute(requested) ||
    /^[a-z]:/i.test(requested) ||
    requested.startsWith('\\') ||
    requested.startsWith('~')
  ) {
    return {
      ok: false,
      reason: 'absolute paths are not accepted; give a path relative to the skill folder, e.g. references/guide.md',
    };
  }
  const segments = requested.split(/[\\/]+/);
  if (segments.includes('..'))
    return { ok: false, reason: '".." is not accepted; the path must stay inside the skill folder' };

  const realDir = await realpath(skillDir);
  const candidate = path.resolve(realDir, ...segments.filter((s) => s !== '' && s !== '.'));
  if (!isInside(realDir, candidate)) return { ok: false, reason: 'the path leads outside the skill folder' };
  const real = await realpath(candidate).catch(() => undefined);
  if (real === undefined) return { ok: false, reason: 'no such file in this skill' };
  if (!isInside(realDir, real))
    return { ok: false, reason: 'the path is a symbolic link that leads outside the skill folder' };
  return { ok: true, path: real };
}
