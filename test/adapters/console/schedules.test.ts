import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSchedule } from '../../../src/schedules/manage.ts';
import { findSchedule, listSchedules } from '../../../src/schedules/store.ts';
import { recordScheduleEvent } from '../../../src/wiring/schedules.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startHarness } from '../../helpers/harness.ts';
import { runCli } from '../../helpers/processes.ts';

describe('/schedules in the console with piped stdin', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('lists the operator’s schedules and pauses one by the id it shows', async () => {
    const h = await startHarness({ db });
    const owner = { platform: 'console', userId: userInfo().username || 'console', workspace: 'local' };
    const made = await createSchedule(
      h.app.pool,
      { maxPerPerson: 20, minIntervalSeconds: 300 },
      recordScheduleEvent(h.app.pool),
      {
        id: randomUUID(),
        owner,
        place: { platform: 'console', channel: 'earlier-session' },
        conversationId: 'console:earlier-session',
        when: 'every 1d',
        task: 'tidy the notes',
        background: false,
        catchUp: 'latest',
      },
      new Date(),
    );
    await h.stop();
    if (!made.ok) throw new Error(made.message);
    const id = made.schedule.id.slice(0, 8);
    const run = runCli(
      ['start'],
      {
        DATABASE_URL: db.url,
        AI_PROVIDER: 'scripted',
        HTTP_PORT: '0',
        HTTP_HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        AGENT_WORKSPACE_ROOT: mkdtempSync(path.join(tmpdir(), 'cs-schedules-')),
      },
      `/schedules\n/schedules pause ${id}\n/schedules history ${id}\n/schedules delete 00000000\n`,
    );
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const out = run.stdout();
    expect(out).toContain(`${id}  every 1d`);
    expect(out).toContain('tidy the notes');
    expect(out).toMatch(new RegExp(`Schedule ${id} .* is paused\\.`));
    expect(out).toContain('None of your schedules has the id 00000000.');
    expect(out).toMatch(new RegExp(`Schedule ${id}.* has not run yet\\.`));
    const h2 = await startHarness({ db });
    try {
      expect(await findSchedule(h2.app.pool, made.schedule.id)).toMatchObject({ status: 'paused' });
    } finally {
      await h2.stop();
    }
  });
});

describe('/schedule in the console with piped stdin', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('prints the card with the next three runs, makes the schedule on `y`, and prints a bad WHEN’s example', async () => {
    const run = runCli(
      ['start'],
      {
        DATABASE_URL: db.url,
        AI_PROVIDER: 'scripted',
        HTTP_PORT: '0',
        HTTP_HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        AGENT_WORKSPACE_ROOT: mkdtempSync(path.join(tmpdir(), 'cs-schedule-')),
      },
      '/schedule every fortnight water the plants\n/schedule 30 8 * * * Europe/Berlin read the overnight alerts\ny\n',
    );
    const { code } = await run.exited;
    expect(code, run.stderr()).toBe(0);
    const out = run.stdout();
    expect(out).toMatch(/I could not read "every fortnight" as WHEN: .*every 15m/);
    expect(out).toContain('Schedule: 30 8 * * * Europe/Berlin');
    // The card as first printed (the terminal prints it again once decided).
    const card = out.slice(out.indexOf('Schedule: 30 8'), out.indexOf('Task: read the overnight alerts'));
    expect(card.match(/• \w{3}, \d{4}-\d{2}-\d{2}, 08:30 Europe\/Berlin \(GMT\+[12]\)/g)).toHaveLength(3);
    expect(out).toMatch(/Scheduled [0-9a-f]{8} \("30 8 \* \* \* Europe\/Berlin"\)/);
    const h = await startHarness({ db });
    try {
      const all = await listSchedules(h.app.pool, {});
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({ task: 'read the overnight alerts', owner: { platform: 'console' } });
    } finally {
      await h.stop();
    }
  });
});
