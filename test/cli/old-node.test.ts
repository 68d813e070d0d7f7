import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const BIN = path.resolve(import.meta.dirname, '../../bin/countersign.js');

/** Runs the entry point on this Node, made to report another version before anything else loads. */
function runAs(version: string, args: string[]) {
  const pretend = `Object.defineProperty(process,"versions",{value:{...process.versions,node:${JSON.stringify(version)}}})`;
  return spawnSync(process.execPath, ['--import', `data:text/javascript,${pretend}`, BIN, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
  });
}

describe('the entry point on an old Node', () => {
  it('prints one line naming the version found, the version needed and the fix, and exits 1', () => {
    const run = runAs('20.20.2', ['config']);
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^countersign: Node 20\.20\.2 is too old; it needs Node 22\.18 or newer\./);
    expect(lines[0]).toContain('npm start');
    expect(run.stderr).not.toMatch(/ERR_UNKNOWN_FILE_EXTENSION|\n\s+at /);
  });

  it('refuses 22.17 and runs on 22.18', () => {
    expect(runAs('22.17.9', ['help']).status).toBe(1);
    const ok = runAs('22.18.0', ['help']);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain('Usage: countersign');
  });
});
