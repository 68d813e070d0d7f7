import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCountersign, type Countersign } from '../../src/app.ts';
import { ScriptedProvider } from '../../src/agent/providers/scripted.ts';
import { createLogger } from '../../src/log.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { testConfig, waitFor } from '../helpers/harness.ts';
import { createPigeon, type Pigeon, type PigeonMessage } from './fourth-platform/pigeon.ts';

/**
 * Issue #32's proof that a platform is a folder: Pigeon (./fourth-platform/) is built from the
 * public adapter interface only and registered the way an embedding application would, yet it is
 * mentioned, shows a card, takes a click — refusing a stranger's — and answers.
 */
describe('a fourth platform, from the public adapter interface only', () => {
  let db: TestDatabase;
  let app: Countersign;
  let pigeon: Pigeon;
  let workspace: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    pigeon = createPigeon();
    const config = testConfig(db.url, { APPROVERS: 'pigeon:bird-bob' });
    workspace = config.AGENT_WORKSPACE_ROOT;
    app = await startCountersign(config, {
      role: 'all',
      platforms: [pigeon.adapter],
      provider: new ScriptedProvider({
        rules: [
          {
            match: String.raw`^write (?<path>\S+): (?<content>.+)$`,
            rounds: [
              {
                text: 'Writing needs a click. ',
                toolCalls: [{ name: 'write_file', args: { path: '{{path}}', content: '{{content}}' } }],
              },
              { text: 'Done: {{lastToolResult}}' },
            ],
          },
          { rounds: [{ text: 'coo to you too' }] },
        ],
      }),
      console: false,
      log: createLogger('silent'),
    });
  });

  afterAll(async () => {
    await app?.stop();
    await db?.drop();
  });

  const notesOn = (perch: string): PigeonMessage[] =>
    [...pigeon.outbound.messages.values()].filter((m) => m.perch === perch);

  it('answers a mention', async () => {
    const admitted = await pigeon.mention('bird-alice', 'perch-1', 'hello');
    expect(admitted).toMatchObject({ ok: true });
    await waitFor(
      async () => (notesOn('perch-1').some((m) => m.text.includes('coo to you too')) ? true : undefined),
      20_000,
      'the answer',
    );
  });

  it("shows a card, refuses a stranger's peck, takes an approver's, and answers", async () => {
    await pigeon.mention('bird-alice', 'perch-2', 'write pigeon.txt: seeds');
    const card = await waitFor(
      async () => notesOn('perch-2').find((m) => m.buttons.some((b) => b.label === 'Approve')),
      20_000,
      'the approval card',
    );
    expect(card.text).toContain('write_file');
    const approve = card.buttons.find((b) => b.label === 'Approve')!;

    await pigeon.peck('bird-mallory', approve.value);
    expect(pigeon.whispers.at(-1)).toMatchObject({
      bird: 'bird-mallory',
      text: expect.stringMatching(/not allowed|approver/i),
    });
    expect(existsSync(path.join(workspace, 'pigeon.txt'))).toBe(false);

    await pigeon.peck('bird-bob', approve.value);
    await waitFor(
      async () => (notesOn('perch-2').some((m) => m.text.includes('Done:')) ? true : undefined),
      20_000,
      'the answer after the click',
    );
    expect(readFileSync(path.join(workspace, 'pigeon.txt'), 'utf8')).toContain('seeds');

    // A stale peck on the decided card changes nothing and says so, privately.
    await pigeon.peck('bird-bob', approve.value);
    expect(pigeon.whispers.at(-1)?.bird).toBe('bird-bob');
    expect(pigeon.whispers.at(-1)?.text).toMatch(/already|no longer|decided/i);
  });

  it('a forged button value is refused, privately, and changes nothing', async () => {
    await pigeon.peck('bird-mallory', `${'A'.repeat(32)}.A`);
    expect(pigeon.whispers.at(-1)).toMatchObject({
      bird: 'bird-mallory',
      text: expect.stringMatching(/does not exist|not/i),
    });
  });
});
