/**
 * docs/architecture.md's "The mention's path, as the code runs it" is drawn from a run: a Slack
 * mention on the fake Slack asks to write a file, the card is shown, approved with a click, and the
 * turn answers. V8's precise coverage of this process says which `src/` modules ran in each step;
 * the doc lists them and this test fails when the code and the list drift apart.
 *
 * Regenerate the section after a deliberate change:
 *   UPDATE_ARCHITECTURE_MAP=1 npx vitest run test/architecture/running-map.test.ts
 */
import path from 'node:path';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../fakes/slack/fake-slack.ts';
import {
  appMention,
  blockAction,
  buttonIn,
  eventCallback,
  eventsApiEnvelope,
  interactiveEnvelope,
} from '../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { ModuleCoverage } from './module-coverage.ts';
import { heldJobs, holdNewJobs, jobsIdle, releaseJobs } from './held-jobs.ts';
import {
  documentedEntries,
  drift,
  firstEntries,
  reentered,
  renderRunningMap,
  START_MARKER,
  sectionIn,
  writeSection,
  type ReentryGroup,
  type Step,
} from './running-map-doc.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const DOC = path.join(REPO, 'docs/architecture.md');
const CHANNEL = 'C0OPS00001';
const ALICE = 'U0ALICE001';
const ANSWER = 'Wrote notes.md:';

/**
 * The one interface through which a later step enters a module an earlier step already ran, as
 * read in the code (coverage cannot see callers). The first rule a module matches names it; a
 * module that runs in more than one step and matches none fails the test until it is placed here.
 */
const REENTRY_INTERFACES: Array<{ through: string; matches: (module: string, steps: number[]) => boolean }> = [
  {
    through:
      'The turn job (`createWorkItemTask` in `src/queue/tasks/run-work-item.ts`, graphile-worker’s task): the continuation is a turn run again, so steps 2 and 5 run the same modules',
    matches: (_, steps) => steps.join() === '2,5',
  },
  {
    through:
      'Slack’s inbound (Bolt’s listeners, wired in `src/adapters/slack/inbound.ts`): the click is a delivery like the mention, so steps 1 and 4 run the same modules',
    matches: (_, steps) => steps.join() === '1,4',
  },
  {
    through:
      'The composition root’s closures (`src/app.ts`): the adapter context (`admit`, `pressButton`) a delivery calls, and the turn-metrics listeners the worker’s events call',
    matches: (module) => module === 'src/app.ts',
  },
  {
    through: 'A platform’s `PlatformRules` (`src/adapters/<platform>/rules.ts`), asked through `PlatformDirectory`',
    matches: (module) => /^src\/adapters\/[^/]+\/rules\.ts$/.test(module) || module === 'src/core/platform-rules.ts',
  },
  {
    through:
      'The exported verbs of `src/queue/turn-lifecycle.ts` (enqueue, start, park, continue, settle) and the statements they run (`src/queue/sql/`)',
    matches: (module) => module === 'src/queue/turn-lifecycle.ts' || module.startsWith('src/queue/sql/'),
  },
  {
    through: '`ApprovalService` (`src/approval/service.ts`), the one approval object the wiring holds',
    matches: (module) => module.startsWith('src/approval/'),
  },
  {
    through:
      '`Outbound` (`src/reply/outbound.ts`) and the card renderer `PlatformAdapter.cards` (`src/approval/card-renderers.ts`)',
    matches: (module) => /^src\/adapters\/slack\/(outbound|blocks|cards|files|format\/)/.test(module),
  },
  {
    through: 'The policy’s `decide` / `mayUse` / `mayDecide` (`src/policy/index.ts`), asked through `PolicyGate`',
    matches: (module) => module.startsWith('src/policy/'),
  },
  {
    through: '`ToolRegistry` and a tool’s `describeForApproval` / `execute` (`src/agent/tools/tool.ts`)',
    matches: (module) => module.startsWith('src/agent/tools/'),
  },
  {
    through: '`Pool` (`src/db/pool.ts`): every SQL statement',
    matches: (module) => module === 'src/db/pool.ts' || module === 'src/queue/poisoned-pool.ts',
  },
  {
    through: 'graphile-worker’s task list (`src/queue/runner.ts`, `src/queue/tasks/`): each job',
    matches: (module) => module === 'src/queue/runner.ts' || module.startsWith('src/queue/tasks/'),
  },
  {
    through: 'Plain data (`src/core`, which imports nothing of the app)',
    matches: (module) => module.startsWith('src/core/'),
  },
  {
    through:
      'The reply outbox’s deliverer (`src/reply/outbox-deliverer.ts`), which every worker process polls on a timer: it claims the replies that wait for a platform’s budget; a parked turn’s card and its continuation wait on it for the park text',
    matches: (module) => module === 'src/reply/outbox-deliverer.ts' || module === 'src/reply/outbox.ts',
  },
  {
    through:
      'The span helpers (`src/telemetry/spans.ts`, which imports nothing of the app): each traced step (docs/observability.md)',
    matches: (module) => module.startsWith('src/telemetry/'),
  },
];

/**
 * Modules whose run in a given step depends on a timer rather than on the path (they may run or
 * not): left out of the map so that the test does not flake on them. Empty today: the test sets the
 * timers that would do it (heartbeat, Stop button) beyond the run, and holds housekeeping's job.
 */
const UNSTEADY: Record<string, string> = {
  'src/policy/policy-file.ts':
    'its re-stat of the policy file runs at most once a second (`restatMs`), in whichever step that second falls',
};

const STEP_TITLES = [
  'Delivery and enqueue',
  'The worker’s turn: model, tool ruling, park',
  'The card is shown',
  'The click',
  'The continuation and the answer',
] as const;

describe('docs/architecture.md maps the modules a mention runs', () => {
  let fake: FakeSlack;
  let h: Harness;
  let db: pg.Pool;
  let coverage: ModuleCoverage;
  const steps: Step[] = [];

  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await startHarness({
      script: {
        rules: [
          {
            rounds: [
              { toolCalls: [{ name: 'write_file', args: { path: 'notes.md', content: 'hello\n' } }] },
              { text: `${ANSWER} {{lastToolResult}}` },
            ],
          },
        ],
      },
      env: {
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_APP_TOKEN: fake.appToken,
        SLACK_API_URL: fake.apiUrl,
        // Timers that would otherwise run in whichever step they happen to fall: the heartbeat
        // beats once at start, and the Stop button stays off a turn this short.
        WORKER_HEARTBEAT_SECONDS: '60',
        WORKER_DEAD_AFTER_SECONDS: '600',
        STOP_BUTTON_AFTER_MS: '60000',
      },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
    // The test's own queries go through a pool of its own: the app's pool is src/db code.
    db = new pg.Pool({ connectionString: h.db.url, max: 2 });
    await holdNewJobs(db);
    coverage = await ModuleCoverage.start(REPO);
    await coverage.take();
    await runTheMention();
  });

  afterAll(async () => {
    await coverage?.stop();
    if (db) await releaseJobs(db);
    await db?.end();
    await h?.stop();
    await fake?.close();
  });

  /** Runs one step, then records the modules it ran. */
  async function step(title: string, run: () => Promise<void>): Promise<void> {
    await run();
    steps.push({ title, ran: (await coverage.take()).filter((module) => !(module in UNSTEADY)) });
  }

  async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
    return waitFor(async () => probe(), 20_000, what);
  }

  /** Nothing runs, and the next step's job (when there is one) waits. */
  const idleWith = (held: number) => async () =>
    (await jobsIdle(db)) && (await heldJobs(db)) === held ? true : undefined;

  async function runTheMention(): Promise<void> {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'write notes.md' });
    const [delivery, turn, card, click, answer] = STEP_TITLES;
    await step(delivery, async () => {
      await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
      await until('the turn’s job', idleWith(1));
    });
    await step(turn, async () => {
      await releaseJobs(db);
      await until('the park and its card job', idleWith(1));
    });
    let shown: { ts: string; blocks: unknown } | undefined;
    await step(card, async () => {
      await releaseJobs(db);
      shown = await until('the card', () =>
        fake.messages.find((m) => m.thread_ts === mention.ts && JSON.stringify(m.blocks).includes('"Approve"')),
      );
      await until('the card job to finish', idleWith(0));
    });
    await step(click, async () => {
      const approve = buttonIn(shown!.blocks, 'Approve');
      await fake.deliver(
        interactiveEnvelope(
          blockAction(fake.team, {
            user: ALICE,
            channel: CHANNEL,
            messageTs: shown!.ts,
            threadTs: mention.ts,
            value: approve.value,
            actionId: approve.action_id,
            responseUrl: fake.actionResponseUrl(CHANNEL, shown!.ts),
          }),
        ),
      );
      await until('the continuation’s job', idleWith(1));
      // The click's handler goes on after the continuation is enqueued: it redraws the card.
      await until('the card to show its decision', () =>
        fake.messages.some((m) => m.ts === shown!.ts && !JSON.stringify(m.blocks).includes('"Approve"'))
          ? true
          : undefined,
      );
    });
    await step(answer, async () => {
      await releaseJobs(db);
      await until('the answer', () =>
        fake.textIn(CHANNEL, mention.ts).some((text) => text.includes(ANSWER)) ? true : undefined,
      );
      await until('the turn to finish', idleWith(0));
    });
  }

  /** Re-entered modules grouped by the interface that brings them back; the unplaced ones apart. */
  function reentryGroups(): { groups: ReentryGroup[]; unplaced: string[] } {
    const groups = REENTRY_INTERFACES.map(({ through }) => ({ through, modules: [] as ReentryGroup['modules'] }));
    const unplaced: string[] = [];
    for (const [module, inSteps] of reentered(steps)) {
      const index = REENTRY_INTERFACES.findIndex((rule) => rule.matches(module, inSteps));
      if (index < 0) unplaced.push(`${module} (steps ${inSteps.join(', ')})`);
      else groups[index]!.modules.push([module, inSteps]);
    }
    return { groups: groups.filter((group) => group.modules.length > 0), unplaced };
  }

  it('runs the path it maps: the file is written after the click and the turn answers', () => {
    expect(steps.map((s) => s.title)).toEqual([...STEP_TITLES]);
    expect(fake.textIn(CHANNEL).some((text) => text.includes(ANSWER))).toBe(true);
  });

  it('names the interface through which a later step enters each module again', () => {
    expect(reentryGroups().unplaced, 'add each to REENTRY_INTERFACES, with the interface that brings it back').toEqual(
      [],
    );
  });

  it('lists, per step, the modules that step enters first, as docs/architecture.md does', () => {
    const { groups, unplaced } = reentryGroups();
    const measured = renderRunningMap({ steps, reentries: groups, unsteady: UNSTEADY });
    if (process.env.UPDATE_ARCHITECTURE_MAP === '1' && unplaced.length === 0) writeSection(DOC, measured);
    const section = sectionIn(readFileSync(DOC, 'utf8'));
    expect(section, `docs/architecture.md has no ${START_MARKER} section`).toBeDefined();
    const changes = drift(documentedEntries(section!), firstEntries(steps), [...STEP_TITLES]);
    expect(
      section,
      [
        'docs/architecture.md no longer maps the modules a mention runs:',
        ...(changes.length > 0 ? changes : ['(the same modules per step; the re-entries or counts differ)']),
        'If the change is meant, regenerate the section:',
        '  UPDATE_ARCHITECTURE_MAP=1 npx vitest run test/architecture/running-map.test.ts',
      ].join('\n'),
    ).toBe(measured);
  });

  it('would notice a module that moved to another step', () => {
    const documented = [['src/a.ts'], ['src/b.ts']];
    expect(drift(documented, [['src/a.ts', 'src/b.ts'], []], ['one', 'two'])).toEqual([
      'step 1 (one) now first enters src/b.ts',
      'step 2 (two) no longer first enters src/b.ts',
    ]);
  });
});
