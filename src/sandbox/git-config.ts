import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A git folder's `config` as a sandboxed program is shown it. A worktree's program reads the clone's
 * git folder (history, diffs), and the clone's `config` is the operator's: it can hold a push token
 * in a remote's URL or an `http.extraHeader`, since the bot's git runs no credential helper. So over
 * each shown git folder's `config` lies a copy that keeps only what reading the repository needs (its
 * format and `extensions`, and the core settings that change how files are read); nothing else of
 * the operator's configuration is shown.
 */

/** Core settings that change how git reads the repository or its files; every `extensions.*` is kept too. */
const CORE_KEPT = new Set([
  'core.repositoryformatversion',
  'core.bare',
  'core.filemode',
  'core.symlinks',
  'core.ignorecase',
  'core.precomposeunicode',
  'core.logallrefupdates',
  'core.autocrlf',
  'core.eol',
  'core.checkstat',
  'core.trustctime',
]);

const kept = (key: string) => CORE_KEPT.has(key) || /^extensions\.[a-z0-9-]+$/.test(key);

/** A file shown read-only at `target` in the sandbox, in place of what is there. */
export interface Overlay {
  source: string;
  target: string;
}

/** Whether `folder` is a git folder (a clone's `.git`): its `config` then needs the overlay. */
function isGitFolder(folder: string): boolean {
  try {
    return statSync(path.join(folder, 'objects')).isDirectory() && statSync(path.join(folder, 'config')).isFile();
  } catch {
    return false;
  }
}

/** `git config --list` of one file, as key/value pairs (reading a file runs nothing; includes are not followed). */
function listConfig(file: string): Promise<Array<[string, string]>> {
  return new Promise((resolve) => {
    execFile(
      'git',
      ['config', '--file', file, '--no-includes', '--null', '--list'],
      { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' } },
      (error, stdout) => {
        // Unreadable: nothing of it is shown, and git inside reads an empty configuration.
        if (error) return resolve([]);
        resolve(
          stdout
            .split('\0')
            .filter(Boolean)
            .map((entry): [string, string] => {
              const at = entry.indexOf('\n');
              return at < 0 ? [entry, 'true'] : [entry.slice(0, at), entry.slice(at + 1)];
            }),
        );
      },
    );
  });
}

/** The kept settings as a config file's text. */
function configText(pairs: ReadonlyArray<[string, string]>): string {
  const sections = new Map<string, string[]>();
  for (const [key, value] of pairs) {
    const lower = key.toLowerCase();
    if (!kept(lower)) continue;
    const [section = '', name = ''] = lower.split('.');
    const quoted = `"${value
      .replace(/[\r\n]/g, ' ')
      .replaceAll('\\', '\\\\')
      .replaceAll('"', '\\"')}"`;
    sections.set(section, [...(sections.get(section) ?? []), `\t${name} = ${quoted}`]);
  }
  return [...sections].map(([section, lines]) => `[${section}]\n${lines.join('\n')}\n`).join('');
}

/** The overlays for the git folders among `readable`, and how to remove their files once the run ends. */
export async function gitConfigOverlays(
  readable: readonly string[],
): Promise<{ overlays: Overlay[]; dispose: () => Promise<void> }> {
  const folders = readable.filter(isGitFolder);
  if (folders.length === 0) return { overlays: [], dispose: async () => undefined };
  const dir = await mkdtemp(path.join(tmpdir(), 'countersign-gitconfig-'));
  const overlays: Overlay[] = [];
  for (const [i, folder] of folders.entries()) {
    const target = path.join(folder, 'config');
    const source = path.join(dir, `${i}.config`);
    await writeFile(source, configText(await listConfig(target)), { mode: 0o644 });
    overlays.push({ source, target });
  }
  return { overlays, dispose: () => rm(dir, { recursive: true, force: true }).catch(() => undefined) };
}
