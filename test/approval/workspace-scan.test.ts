import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { scanWorkspace, StatCache } from '../../src/approval/workspace-scan.ts';

/** A clock an hour ahead: every file is old enough for its stat to be trusted (not racy). */
const later = () => Date.now() + 3_600_000;

function workspace(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'cs-scan-'));
  mkdirSync(path.join(root, 'src', 'deep'), { recursive: true });
  writeFileSync(path.join(root, 'README.md'), '# hi\n');
  writeFileSync(path.join(root, 'src', 'a.js'), 'one\n');
  writeFileSync(path.join(root, 'src', 'deep', 'b.js'), 'two\n');
  return root;
}

const entryOf = async (root: string, rel: string, cache: StatCache, now = later) =>
  (await scanWorkspace(root, { cache, now })).entries.get(rel)?.entry;

describe('the workspace scan: content hashes behind a stat cache', () => {
  it('hashes every file once, and not again while size, mtime, ctime and inode stay', async () => {
    const root = workspace();
    const cache = new StatCache();
    const first = await scanWorkspace(root, { cache, now: later });
    expect([...first.entries.keys()].sort()).toEqual(['README.md', 'src/a.js', 'src/deep/b.js']);
    expect(cache.hashed).toBe(3);
    const second = await scanWorkspace(root, { cache, now: later });
    expect(cache.hashed).toBe(3);
    expect(second.entries).toEqual(first.entries);
    // One file rewritten: only it is read again.
    writeFileSync(path.join(root, 'src', 'a.js'), 'ONE\n');
    const third = await scanWorkspace(root, { cache, now: later });
    expect(cache.hashed).toBe(4);
    expect(third.entries.get('src/a.js')?.entry).not.toBe(first.entries.get('src/a.js')?.entry);
  });

  it('sees a same-size rewrite whose mtime was set back (`touch -d`): the ctime moved', async () => {
    const root = workspace();
    const file = path.join(root, 'src', 'a.js');
    const old = new Date('2020-01-01T00:00:00Z');
    utimesSync(file, old, old);
    const cache = new StatCache();
    const before = await entryOf(root, 'src/a.js', cache);
    const { mtimeMs, size, ctimeNs, ino } = statSync(file, { bigint: true });
    // Rewritten until the file system's coarse clock has ticked: only the ctime tells (the same
    // tick is the racy case, below).
    for (let i = 0; i < 100 && statSync(file, { bigint: true }).ctimeNs === ctimeNs; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      writeFileSync(file, 'evil');
      utimesSync(file, old, old);
    }
    expect(statSync(file, { bigint: true })).toMatchObject({ mtimeMs, size, ino });
    const after = await entryOf(root, 'src/a.js', cache);
    expect(after).not.toBe(before);
  });

  it('sees a file replaced by rename with the same size and times: the inode moved', async () => {
    const root = workspace();
    const file = path.join(root, 'src', 'a.js');
    const old = new Date('2020-01-01T00:00:00Z');
    utimesSync(file, old, old);
    const cache = new StatCache();
    const before = await entryOf(root, 'src/a.js', cache);
    const other = path.join(root, 'swap.tmp');
    writeFileSync(other, 'evil');
    utimesSync(other, old, old);
    renameSync(other, file);
    expect(await entryOf(root, 'src/a.js', cache)).not.toBe(before);
  });

  it('re-hashes a file changed just before it was hashed (racy), so a write in the same tick is not missed', async () => {
    const root = workspace();
    const cache = new StatCache();
    await scanWorkspace(root, { cache }); // the real clock: every file was written just now
    const hashed = cache.hashed;
    await scanWorkspace(root, { cache });
    expect(cache.hashed).toBe(hashed * 2);
  });

  it('records a link by its target without following it, an executable bit, and only the root .git’s hooks and config', async () => {
    const root = workspace();
    const outside = mkdtempSync(path.join(tmpdir(), 'cs-scan-outside-'));
    writeFileSync(path.join(outside, 'secret'), 'do not read');
    symlinkSync(outside, path.join(root, 'out'));
    symlinkSync('README.md', path.join(root, 'readme-link'));
    chmodSync(path.join(root, 'src', 'a.js'), 0o755);
    mkdirSync(path.join(root, '.git', 'hooks'), { recursive: true });
    mkdirSync(path.join(root, '.git', 'objects', 'ab'), { recursive: true });
    writeFileSync(path.join(root, '.git', 'hooks', 'pre-commit'), 'x');
    writeFileSync(path.join(root, '.git', 'objects', 'ab', 'cdef'), 'x');
    writeFileSync(path.join(root, '.git', 'index'), 'x');
    mkdirSync(path.join(root, 'vendor', '.git'), { recursive: true });
    writeFileSync(path.join(root, 'vendor', '.git', 'config'), 'x');
    const cache = new StatCache();
    const { entries } = await scanWorkspace(root, { cache, now: later });
    expect(entries.get('out')?.entry).toMatch(/^l:[0-9a-f]{64}$/);
    expect(entries.has('out/secret')).toBe(false);
    expect(entries.get('readme-link')?.entry).toMatch(/^l:/);
    expect(entries.get('src/a.js')?.entry).toMatch(/^x:/);
    expect(entries.get('README.md')?.entry).toMatch(/^f:/);
    // Of the workspace's own .git only what makes git run a program: a hook is content, objects are not.
    expect(entries.has('.git/hooks/pre-commit')).toBe(true);
    expect(entries.has('.git/objects/ab/cdef')).toBe(false);
    expect(entries.has('.git/index')).toBe(false);
    // A nested repository's .git is content like any other.
    expect(entries.has('vendor/.git/config')).toBe(true);
  });

  it("records a submodule's git config, hooks and info under .git/modules (git status runs its fsmonitor), not its objects", async () => {
    const root = workspace();
    const sub = path.join(root, '.git', 'modules', 'lib');
    const nested = path.join(sub, 'modules', 'inner');
    for (const dir of [path.join(sub, 'hooks'), path.join(sub, 'objects', 'ab'), path.join(nested, 'info')])
      mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(sub, 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(path.join(nested, 'HEAD'), 'ref: refs/heads/main\n');
    writeFileSync(path.join(sub, 'config'), '[core]\n\tfsmonitor = ../../../notes.txt\n');
    writeFileSync(path.join(sub, 'hooks', 'post-checkout'), 'x');
    writeFileSync(path.join(sub, 'objects', 'ab', 'cdef'), 'x');
    writeFileSync(path.join(sub, 'index'), 'x');
    writeFileSync(path.join(nested, 'config'), 'x');
    writeFileSync(path.join(nested, 'info', 'attributes'), 'x');
    const { entries } = await scanWorkspace(root, { cache: new StatCache(), now: later });
    expect(entries.has('.git/modules/lib/config')).toBe(true);
    expect(entries.has('.git/modules/lib/hooks/post-checkout')).toBe(true);
    expect(entries.has('.git/modules/lib/modules/inner/config')).toBe(true);
    expect(entries.has('.git/modules/lib/modules/inner/info/attributes')).toBe(true);
    expect(entries.has('.git/modules/lib/objects/ab/cdef')).toBe(false);
    expect(entries.has('.git/modules/lib/index')).toBe(false);
    expect(entries.has('.git/modules/lib/HEAD')).toBe(false);
  });

  it('stops at its bounds and says the scan is incomplete', async () => {
    const root = workspace();
    const cache = new StatCache();
    const capped = await scanWorkspace(root, { cache, now: later, limits: { files: 2, depth: 64 } });
    expect(capped.complete).toBe(false);
    expect(capped.entries.size).toBe(2);
    const shallow = await scanWorkspace(root, { cache, now: later, limits: { files: 100, depth: 1 } });
    expect(shallow.complete).toBe(false);
    expect(await scanWorkspace(path.join(root, 'missing'), { cache })).toEqual({ entries: new Map(), complete: true });
  });
});
