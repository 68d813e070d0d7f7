import { rmSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { makeRepo } from './git-fixture.ts';
import { createLogger } from '../../src/log.ts';
import { Priority } from '../../src/core/work-item.ts';

/**
 * `/review api nosuchbranch`: the person reads one line saying the branch does not exist, and the
 * log holds no error with a stack — it is a refusal the person can act on, not a failure.
 */
describe('a review of a branch that does not exist', () => {
  let h: Harness;
  let dir: string;
  const lines: Array<{ level: number; msg: string; err?: { stack?: string } }> = [];

  beforeAll(async () => {
    let clone: string;
    ({ dir, clone } = makeRepo());
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    h = await startHarness({
      script: { rules: [{ rounds: [{ text: 'ok' }] }] },
      env: { REPOS: `api=${clone}`, WORKTREES_DIR: path.join(dir, 'worktrees') },
      log: createLogger('info', sink),
    });
  });
  afterAll(async () => {
    await h.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is refused in one readable line, with no error or stack in the log', async () => {
    const item = await h.say('review-missing', 'Review the branch nosuchbranch of api against its base.', {
      type: 'REVIEW',
      priority: Priority.HIGH,
      payload: { repo: 'api', branch: 'nosuchbranch' },
    });
    const settled = await h.settled(item.id);
    expect(settled.status).toBe('failed');
    const said = [...h.outbound.messages.values()].map((m) => m.text).join('\n');
    expect(said).toContain('There is no branch "nosuchbranch" in api.');
    expect(said).not.toMatch(/\n\s+at /);
    const errors = lines.filter((l) => l.level >= 50 || l.err?.stack);
    expect(errors.map((l) => l.msg)).toEqual([]);
  });
});
