import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadReposFile, parseReposFile, parseReposVariable, RepoCatalog } from '../../src/repos/repos-config.ts';
import { openCodeWork } from '../../src/wiring/repos.ts';
import { ConfigError } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import type { Pool } from '../../src/db/pool.ts';
import { testConfig } from '../helpers/harness.ts';
import { makeRepo, setupGit } from './git-fixture.ts';
import { unconfinedSandbox } from '../helpers/sandbox.ts';

describe('REPOS', () => {
  it('reads name=path pairs, resolving paths against the working directory', () => {
    expect(parseReposVariable('api=/srv/api, web=../web', '/home/ops')).toEqual({
      ok: true,
      repos: [
        { name: 'api', path: '/srv/api' },
        { name: 'web', path: '/home/web' },
      ],
    });
  });

  it('reports every bad pair at once', () => {
    const result = parseReposVariable('api=/srv/api,/srv/web,API=/x,api=/y,a b=/z');
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problems).toEqual([
      'REPOS: "/srv/web" is not name=path (e.g. api=/srv/api)',
      expect.stringMatching(/^REPOS: "API" is not a repository name: lower-case/),
      'REPOS: "api" is named twice',
      expect.stringMatching(/^REPOS: "a b" is not a repository name/),
    ]);
  });
});

describe('REPOS_FILE', () => {
  const yaml = `repos:
  api:
    path: ./api
    base: main
    test: [npm, test]
    push: origin
  web:
    path: /srv/web
`;

  it('reads YAML with base, test and push, paths resolved against the file', () => {
    expect(parseReposFile(yaml, '/etc/countersign/repos.yaml')).toEqual({
      ok: true,
      repos: [
        { name: 'api', path: '/etc/countersign/api', base: 'main', test: ['npm', 'test'], push: 'origin' },
        { name: 'web', path: '/srv/web' },
      ],
    });
  });

  it('reads JSON too', () => {
    const result = parseReposFile('{"repos": {"api": {"path": "/srv/api"}}}', 'repos.json');
    expect(result).toEqual({ ok: true, repos: [{ name: 'api', path: '/srv/api' }] });
  });

  it('names the file and line of each problem', () => {
    const bad = `repos:
  api:
    path: /srv/api
    base: --upload-pack=evil
  Web:
    path: /srv/web
  docs:
    path: /srv/docs
    tset: [npm, test]
`;
    const result = parseReposFile(bad, 'repos.yaml');
    expect(result.ok).toBe(false);
    const problems = result.ok ? [] : result.problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^repos\.yaml:4 \(repos\.api\.base\): expected a branch name/),
        'repos.yaml:5 (repos.Web): a repository name is lower-case letters, digits, - and _ (at most 40), e.g. api',
        expect.stringMatching(/^repos\.yaml:9 \(repos\.docs\.tset\): .*tset/),
      ]),
    );
  });

  it('says when the file cannot be read or parsed', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-repos-'));
    expect(loadReposFile(path.join(dir, 'missing.yaml'))).toEqual({
      ok: false,
      problems: [expect.stringMatching(/missing\.yaml: cannot be read \(ENOENT\)/)],
    });
    const broken = path.join(dir, 'broken.yaml');
    writeFileSync(broken, 'repos:\n  api: [unclosed\n');
    const result = loadReposFile(broken);
    expect(!result.ok && result.problems[0]).toMatch(/broken\.yaml:\d+: /);
  });
});

describe('an unknown repository', () => {
  it('is refused with the known names', () => {
    const catalog = new RepoCatalog([
      { name: 'web', path: '/srv/web' },
      { name: 'api', path: '/srv/api' },
    ]);
    expect(catalog.get('api')).toMatchObject({ ok: true, repo: { path: '/srv/api' } });
    expect(catalog.get('ap')).toEqual({ ok: false, reason: 'There is no repository "ap" here. Known: api, web.' });
    expect(new RepoCatalog([]).get('api')).toEqual({
      ok: false,
      reason: 'No repositories are configured: set REPOS (name=path pairs) or REPOS_FILE.',
    });
  });
});

describe('the repositories at start', () => {
  /** A clone on `main` with a `dev` branch, an `upstream` remote and its HEAD detached. */
  function detachedClone(): string {
    const { clone } = makeRepo();
    setupGit(clone, 'branch', 'dev');
    setupGit(clone, 'remote', 'add', 'upstream', 'https://example.invalid/api.git');
    setupGit(clone, 'checkout', '-q', '--detach');
    return clone;
  }

  it('reports every problem of REPOS_FILE at once, before any /code: a missing base, a missing remote, not a clone, no branch to default to', async () => {
    const clone = detachedClone();
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-repos-check-'));
    const file = path.join(dir, 'repos.yaml');
    writeFileSync(
      file,
      `repos:
  api:
    path: ${clone}
    base: nosuchbranch
    push: origin
  web:
    path: ${dir}/not-a-clone
  docs:
    path: ${clone}
  ok:
    path: ${clone}
    base: dev
    push: upstream
`,
    );
    const config = testConfig('postgres://unused@127.0.0.1:1/none', { REPOS_FILE: file, WORKTREES_DIR: dir });
    const opened = openCodeWork(config, createLogger('silent'), {} as Pool, {
      runsTurns: true,
      sandbox: unconfinedSandbox(),
    });
    const error = await opened.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      `${file}: api: base: there is no branch "nosuchbranch" in ${clone} (its branches: dev, main)`,
      `${file}: api: push: there is no remote "origin" in ${clone} (git remote -v lists them)`,
      `${file}: web: ${dir}/not-a-clone is not a git clone (or cannot be read)`,
      `${file}: docs: ${clone} has no branch checked out to default to: set its base (REPOS_FILE: base: main)`,
    ]);
    // One readable message: what the start prints before it exits 1 — a heading, the four problems
    // and the hint every configuration error ends with.
    expect((error as ConfigError).message.split('\n')).toHaveLength(6);
  });
});
