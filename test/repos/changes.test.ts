import { chmodSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { branchTip, changeDiff, changedFiles, commitWorktree } from '../../src/repos/changes.ts';
import { commitFiles, makeHostile, makeRepo, rev, setupGit } from './git-fixture.ts';
import { saveToInbox } from '../../src/files/inbox.ts';

/** A clone on a `feature` branch made from `main`. */
function featureRepo() {
  const made = makeRepo();
  setupGit(made.clone, 'checkout', '-q', '-b', 'feature');
  return made;
}

const write = (cwd: string, name: string, content: string | Buffer) => {
  mkdirSync(path.dirname(path.join(cwd, name)), { recursive: true });
  writeFileSync(path.join(cwd, name), content);
};

describe('commitWorktree', () => {
  it('commits every change as the bot, with the trailers after the message', async () => {
    const { clone } = featureRepo();
    write(clone, 'new.txt', 'new\n');
    const made = await commitWorktree(clone, {
      message: '  Add new.txt\n\nBecause.  \n',
      trailers: ['Co-authored-by: Ada <ada@example.com>'],
    });
    expect(made?.sha).toBe(rev(clone, 'HEAD'));
    expect(setupGit(clone, 'log', '-1', '--format=%an <%ae>|%cn <%ce>').trim()).toBe(
      'Countersign <countersign@localhost>|Countersign <countersign@localhost>',
    );
    expect(setupGit(clone, 'log', '-1', '--format=%B').trim()).toBe(
      'Add new.txt\n\nBecause.\n\nCo-authored-by: Ada <ada@example.com>',
    );
    expect(setupGit(clone, 'log', '-1', '--format=%(trailers:key=Co-authored-by,valueonly)').trim()).toBe(
      'Ada <ada@example.com>',
    );
  });

  it('returns undefined and makes no commit when nothing changed', async () => {
    const { clone } = featureRepo();
    const before = rev(clone, 'HEAD');
    expect(await commitWorktree(clone, { message: 'nothing', trailers: [] })).toBeUndefined();
    expect(rev(clone, 'HEAD')).toBe(before);
  });

  it('includes untracked files and leaves ignored ones out', async () => {
    const { clone } = featureRepo();
    commitFiles(clone, { '.gitignore': 'build/\n' });
    write(clone, 'src/a.ts', 'a\n');
    write(clone, 'build/out.js', 'x\n');
    const made = await commitWorktree(clone, { message: 'add a', trailers: [] });
    expect(setupGit(clone, 'show', '--name-only', '--format=', made!.sha).trim()).toBe('src/a.ts');
  });

  it('leaves the files people sent out of the change, and the repository’s own inbox/ in', async () => {
    const { clone } = featureRepo();
    const received = await saveToInbox(clone, 'slack:T1:C0DEV0001', 'screenshot.png', Buffer.from('png'));
    write(clone, 'inbox/README.md', 'the repository’s own inbox folder\n');
    write(clone, 'src/fix.ts', 'fixed\n');
    const made = await commitWorktree(clone, { message: 'fix', trailers: [] });
    const committed = setupGit(clone, 'show', '--name-only', '--format=', made!.sha).trim().split('\n');
    expect(committed.sort()).toEqual(['inbox/README.md', 'src/fix.ts']);
    expect(committed).not.toContain(received);
  });

  it('uses a default message when the model gave none, and caps a long one', async () => {
    const { clone } = featureRepo();
    write(clone, 'a.txt', 'a\n');
    await commitWorktree(clone, { message: ' \n ', trailers: [] });
    expect(setupGit(clone, 'log', '-1', '--format=%B').trim()).toBe('Changes by Countersign');
    write(clone, 'b.txt', 'b\n');
    await commitWorktree(clone, { message: 'x'.repeat(10_000), trailers: [] });
    expect(setupGit(clone, 'log', '-1', '--format=%B').trim()).toHaveLength(4_000);
  });

  it('keeps a trailer on one line: a name cannot add lines to the message', async () => {
    const { clone } = featureRepo();
    write(clone, 'a.txt', 'a\n');
    await commitWorktree(clone, { message: 'm', trailers: ['Co-authored-by: Eve\nSigned-off-by: Boss <b@x>'] });
    expect(setupGit(clone, 'log', '-1', '--format=%B').trim()).toBe(
      'm\n\nCo-authored-by: Eve Signed-off-by: Boss <b@x>',
    );
  });

  it('takes a message that starts with a dash as the message', async () => {
    const { clone } = featureRepo();
    write(clone, 'a.txt', 'a\n');
    await commitWorktree(clone, { message: '--amend', trailers: [] });
    expect(setupGit(clone, 'log', '-1', '--format=%B').trim()).toBe('--amend');
    expect(setupGit(clone, 'rev-list', '--count', 'HEAD').trim()).toBe('2');
  });
});

describe('changedFiles and changeDiff', () => {
  it('lists counts, binary files, modes, renames, deletions and awkward paths', async () => {
    const { clone } = makeRepo();
    commitFiles(clone, {
      'old name.txt': 'one\ntwo\nthree\nfour\nfive\n',
      'gone.txt': 'bye\n',
      'run.sh': '#!/bin/sh\n',
      'edit.txt': 'a\nb\n',
    });
    setupGit(clone, 'checkout', '-q', '-b', 'feature');
    setupGit(clone, 'mv', 'old name.txt', 'new name.txt');
    rmSync(path.join(clone, 'gone.txt'));
    chmodSync(path.join(clone, 'run.sh'), 0o755);
    write(clone, 'edit.txt', 'a\nB\nc\n');
    write(clone, 'image.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3, 0, 255]));
    write(clone, 'dir with space/line\nbreak ünï.txt', 'x\n');
    symlinkSync('edit.txt', path.join(clone, 'link'));
    const made = await commitWorktree(clone, { message: 'many', trailers: [] });
    const files = await changedFiles(clone, 'main', made!.sha);
    const byPath = Object.fromEntries(files.map((f) => [f.path, f]));
    expect(Object.keys(byPath).sort()).toEqual(
      [
        'dir with space/line\nbreak ünï.txt',
        'edit.txt',
        'gone.txt',
        'image.png',
        'link',
        'new name.txt',
        'run.sh',
      ].sort(),
    );
    expect(byPath['new name.txt']).toMatchObject({ status: 'renamed', oldPath: 'old name.txt', added: 0, removed: 0 });
    expect(byPath['gone.txt']).toMatchObject({ status: 'deleted', added: 0, removed: 1, oldMode: '100644' });
    expect(byPath['gone.txt']?.mode).toBeUndefined();
    expect(byPath['run.sh']).toMatchObject({
      status: 'modified',
      mode: '100755',
      oldMode: '100644',
      executable: true,
      modeChanged: true,
    });
    expect(byPath['edit.txt']).toMatchObject({ added: 2, removed: 1, binary: false, modeChanged: false });
    expect(byPath['image.png']).toMatchObject({ status: 'added', binary: true, added: null, removed: null });
    expect(byPath['image.png']?.oldMode).toBeUndefined();
    expect(byPath['link']).toMatchObject({ status: 'added', symlink: true, mode: '120000', executable: false });
    expect(byPath['dir with space/line\nbreak ünï.txt']).toMatchObject({ status: 'added', added: 1, removed: 0 });

    const diff = await changeDiff(clone, 'main', made!.sha);
    expect(diff).toContain('diff --git a/edit.txt b/edit.txt');
    expect(diff).toContain('+B\n');
    expect(diff).toMatch(/Binary files \/dev\/null and b\/image.png differ/);
    expect(diff).toContain('rename from old name.txt');
  });

  it('shows a file turned into a symlink as type-changed', async () => {
    const { clone } = makeRepo();
    setupGit(clone, 'checkout', '-q', '-b', 'feature');
    rmSync(path.join(clone, 'README.md'));
    symlinkSync('elsewhere', path.join(clone, 'README.md'));
    const made = await commitWorktree(clone, { message: 'link', trailers: [] });
    expect(await changedFiles(clone, 'main', made!.sha)).toEqual([
      expect.objectContaining({ path: 'README.md', status: 'type-changed', symlink: true, modeChanged: true }),
    ]);
  });

  it('shows only what the branch did, not what the base did since (three dots)', async () => {
    const { clone } = makeRepo();
    setupGit(clone, 'checkout', '-q', '-b', 'feature');
    const sha = commitFiles(clone, { 'mine.txt': 'mine\n' });
    setupGit(clone, 'checkout', '-q', 'main');
    commitFiles(clone, { 'theirs.txt': 'theirs\n' });
    expect((await changedFiles(clone, 'main', sha)).map((f) => f.path)).toEqual(['mine.txt']);
    expect(await changeDiff(clone, 'main', sha)).not.toContain('theirs');
  });

  it('refuses a base that git could take for an option', async () => {
    const { clone } = makeRepo();
    const sha = rev(clone, 'HEAD');
    await expect(changedFiles(clone, '--output=/tmp/x', sha)).rejects.toThrow(/not a revision/);
    await expect(changeDiff(clone, 'main', 'HEAD')).rejects.toThrow(/full commit id/);
  });
});

describe('branchTip', () => {
  it('gives the commit of exactly that branch, or undefined', async () => {
    const { clone } = makeRepo();
    setupGit(clone, 'branch', 'countersign/abc');
    expect(await branchTip(clone, 'main')).toBe(rev(clone, 'main'));
    expect(await branchTip(clone, 'countersign/abc')).toBe(rev(clone, 'main'));
    expect(await branchTip(clone, 'countersign')).toBeUndefined();
    expect(await branchTip(clone, 'nope')).toBeUndefined();
  });
});

describe('on a hostile repository', () => {
  it('commits, lists and diffs running none of its programs', async () => {
    const { dir, clone } = makeRepo();
    const base = rev(clone, 'HEAD');
    setupGit(clone, 'checkout', '-q', '-b', 'feature');
    const { pwned } = makeHostile(dir, clone);
    write(clone, 'README.md', '# changed\n');
    write(clone, 'added.txt', 'new\n');
    const made = await commitWorktree(clone, {
      message: 'hostile',
      trailers: ['Co-authored-by: Ada <ada@example.com>'],
    });
    const files = await changedFiles(clone, base, made!.sha);
    const diff = await changeDiff(clone, base, made!.sha);
    expect(files.map((f) => f.path).sort()).toEqual(['.gitattributes', 'README.md', 'added.txt']);
    expect(diff).toContain('+# changed');
    // color.ui=always in the repository: the diff stays plain text.
    expect(diff).not.toContain('\u001b[');
    expect(readdirSync(pwned)).toEqual([]);
  });

  it('would run them with plain git (the test is real)', () => {
    const { dir, clone } = makeRepo();
    const { pwned } = makeHostile(dir, clone);
    write(clone, 'README.md', '# changed\n');
    setupGit(clone, 'add', 'README.md');
    setupGit(clone, 'commit', '-q', '--no-gpg-sign', '-m', 'x', '--trailer', 'Co-authored-by: A <a@b>');
    setupGit(clone, 'diff', 'HEAD~1', 'HEAD');
    expect(readdirSync(pwned)).toEqual(
      expect.arrayContaining(['clean', 'fsmonitor', 'pre-commit', 'trailer', 'diff-command']),
    );
  });
});
