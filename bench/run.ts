import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/db/embedded.ts';
import { migrate } from '../src/db/migrate.ts';
import { createLogger } from '../src/log.ts';
import { benchP1 } from './p1-event-to-start.ts';
import { benchP2 } from './p2-token-to-visible.ts';
import { benchP3 } from './p3-platform-budget.ts';
import { benchP4 } from './p4-throughput.ts';
import { benchP5 } from './p5-critical-under-load.ts';
import { benchP6 } from './p6-kill-resume.ts';
import { benchP7 } from './p7-memory.ts';
import { benchP8, meanBilled } from './p8-conversation-cost.ts';
import { benchP9 } from './p9-click-progress.ts';
import { benchP10 } from './p10-isolation.ts';
import { benchBudget } from './result-budget.ts';
import { benchFiles } from './files.ts';
import { benchMrkdwn } from './mrkdwn.ts';
import { benchSpend } from './spend.ts';
import { benchSchedules } from './schedules.ts';
import { round } from './stats.ts';

type Row = [figure: string, countersign: string | number, baseline: string | number, ratio: string, target: string];

/**
 * `npm run bench`: measures Countersign against raw baselines taken in the same run, on a real
 * Postgres (DATABASE_URL, or an embedded one) over loopback. Prints a markdown table and writes JSON
 * to bench/results/. BENCH_ONLY=P1,P5 picks figures; BUDGET (tool-result cutting, about half a
 * minute of CPU), FILES (fitting images and extracting PDF text), MRKDWN (the Slack converter on
 * crafted text), SPEND (spend limits' cost per model call, and P4 with a budget beside P4 without)
 * and SCHEDULES (what looking a schedule owner's groups up again costs the scheduler) run only when
 * named.
 */
async function main(): Promise<void> {
  const log = createLogger('warn');
  let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    embedded = await startEmbeddedPostgres({ dir: path.resolve('.data', 'bench-postgres'), ephemeral: true, log });
    adminUrl = embedded.adminUrl;
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const databases: string[] = [];
  // Each figure gets a fresh database, so one's leftovers (10,000 LOW jobs) don't skew the next.
  const freshDatabase = async (name: string) => {
    const dbName = `cs_bench_${name}_${Date.now()}`;
    await admin.query(`CREATE DATABASE ${dbName}`);
    databases.push(dbName);
    const url = new URL(adminUrl);
    url.pathname = `/${dbName}`;
    await migrate(url.toString(), log);
    return url.toString();
  };
  const only = (process.env.BENCH_ONLY ?? 'P1,P2,P3,P4,P5,P6,P7,P8,P9,P10').split(',');
  const samples = Number(process.env.BENCH_SAMPLES ?? 200);
  const results: Record<string, unknown> = {};
  const rows: Row[] = [];
  try {
    if (only.includes('P1')) {
      const p1 = await benchP1(await freshDatabase('p1'), await freshDatabase('p1raw'), samples);
      results.p1 = p1;
      rows.push(
        [
          'P1 event → job start p50 (ms)',
          round(p1.countersign.p50),
          round(p1.raw.p50),
          `${round(p1.ratioP50)}×`,
          '≤ 1.2× raw',
        ],
        [
          'P1 event → job start p99 (ms)',
          round(p1.countersign.p99),
          round(p1.raw.p99),
          `${round(p1.countersign.p99 / p1.raw.p99)}×`,
          '',
        ],
        [
          'P1 event → turn ready (state read) p50 / p99 (ms)',
          `${round(p1.turnReady.p50)} / ${round(p1.turnReady.p99)}`,
          `${round(p1.raw.p50)} / ${round(p1.raw.p99)}`,
          `${round(p1.turnReady.p50 / p1.raw.p50)}×`,
          '',
        ],
      );
    }
    if (only.includes('P2')) {
      const p2 = await benchP2(await freshDatabase('p2'));
      results.p2 = p2;
      rows.push([
        'P2 model token → visible in Discord, p50 / p99 (ms)',
        `${round(p2.latency.p50)} / ${round(p2.latency.p99)}`,
        `edit interval ${p2.editIntervalMs} ms`,
        `${round(p2.latency.p50 / (p2.editIntervalMs + 25))}× of target`,
        'p50 ≤ interval + 25 ms',
      ]);
    }
    if (only.includes('P3')) {
      const p3 = await benchP3(freshDatabase, Number(process.env.BENCH_P3_CONVERSATIONS ?? 200));
      results.p3 = p3;
      for (const r of p3) {
        rows.push([
          `P3 ${r.conversations} conversations, one ${r.platform === 'slack' ? 'Slack workspace' : 'Discord guild'}: busiest minute / 429s / incomplete`,
          `${r.peakPerMinute} / ${r.rateLimited} / ${r.incomplete}`,
          `budget ${r.budgetPerMinute}/min`,
          `${round(r.seconds, 1)} s`,
          'zero 429s, zero incomplete',
        ]);
      }
    }
    if (only.includes('P4')) {
      const p4 = await benchP4(await freshDatabase('p4'), Number(process.env.BENCH_TURNS ?? 1000));
      results.p4 = p4;
      rows.push(
        [
          'P4 turns per second',
          round(p4.durable.turnsPerSecond, 1),
          round(p4.direct.turnsPerSecond, 1),
          `${round(p4.durable.turnsPerSecond / p4.direct.turnsPerSecond)}×`,
          '≥ 300/s',
        ],
        [
          'P4 CPU ms per turn (this process)',
          round(p4.durable.cpuMsPerTurn),
          round(p4.direct.cpuMsPerTurn),
          `${round(p4.cpuRatio)}×`,
          '≤ 3× direct',
        ],
        [
          'P4 CPU ms per turn (+ Postgres)',
          round(p4.durable.withPostgresCpuMsPerTurn),
          round(p4.direct.cpuMsPerTurn),
          `${round(p4.durable.withPostgresCpuMsPerTurn / p4.direct.cpuMsPerTurn)}×`,
          '',
        ],
      );
    }
    if (only.includes('P5')) {
      const p5 = await benchP5(await freshDatabase('p5'));
      results.p5 = p5;
      rows.push([
        'P5 CRITICAL start, 10k LOW waiting, p50 / p99 (ms)',
        `${round(p5.p50)} / ${round(p5.p99)}`,
        '',
        '',
        'p99 ≤ 50 ms',
      ]);
    }
    if (only.includes('P6')) {
      const p6 = await benchP6(await freshDatabase('p6'));
      results.p6 = p6;
      rows.push([
        'P6 SIGKILL → turn resumed / finished (s)',
        `${round(p6.resumedAfterSeconds, 1)} / ${round(p6.finishedAfterSeconds, 1)}`,
        `dead after ${p6.deadAfterSeconds} s`,
        '',
        '≤ 30 s',
      ]);
    }
    if (only.includes('P7')) {
      const p7 = await benchP7(await freshDatabase('p7'));
      results.p7 = p7;
      rows.push(
        [
          `P7 RSS growth per 1,000 in-flight conversations (MB; ${p7.streamingAtOnce} streaming, rest queued)`,
          round(p7.mbPer1000, 1),
          `${round(p7.rssBeforeMb, 1)} MB idle`,
          '',
          '≤ 150 MB',
        ],
        ['P7 RSS growth scaled to 1,000 turns streaming at once (MB)', round(p7.mbPer1000Streaming, 1), '', '', ''],
      );
    }
    if (only.includes('P8')) {
      const p8 = await benchP8(freshDatabase, Number(process.env.BENCH_P8_TURNS ?? 40));
      results.p8 = p8;
      const { cached, baseline } = p8;
      const last = p8.turnCount;
      const at = (v: typeof cached, n: number) => v.turns[n - 1]!.billedInput;
      const pct = (x: number) => `${round(100 * x, 1)}%`;
      rows.push(
        [
          `P8 ${last}-turn conversation: cache reads / all input, turns 2–${last}`,
          pct(cached.readShareFromTurn2),
          pct(baseline.readShareFromTurn2),
          '',
          '≥ 85% from turn 2',
        ],
        [
          'P8 turns at ≥ 85% cache reads (the rest)',
          `${cached.turnsAtTarget}/${last - 1} (${cached.turnsBelowTarget.join(', ') || 'none'})`,
          `${baseline.turnsAtTarget}/${last - 1}`,
          `${cached.compactions} compactions`,
          '',
        ],
        [
          `P8 billed input per turn, turn 10 / turn ${last} (input-token equivalents)`,
          `${round(at(cached, 10), 0)} / ${round(at(cached, last), 0)}`,
          `${round(at(baseline, 10), 0)} / ${round(at(baseline, last), 0)}`,
          `${round(at(cached, last) / at(cached, 10))}×`,
          `turn ${last} ≤ 1.3× turn 10`,
        ],
        [
          `P8 billed input per turn, mean of turns 11–20 / ${last - 9}–${last}`,
          `${round(meanBilled(cached, 11, 20), 0)} / ${round(meanBilled(cached, last - 9, last), 0)}`,
          `${round(meanBilled(baseline, 11, 20), 0)} / ${round(meanBilled(baseline, last - 9, last), 0)}`,
          `${round(meanBilled(cached, last - 9, last) / meanBilled(cached, 11, 20))}×`,
          '',
        ],
        [
          'P8 whole conversation at claude-sonnet-5-5 list prices (uncached equivalent)',
          `$${round(cached.cost, 3)} ($${round(cached.uncachedCost, 3)})`,
          `$${round(baseline.cost, 3)}`,
          `${round(cached.cost / baseline.cost)}×`,
          '',
        ],
      );
    }
    if (only.includes('P9')) {
      const p9 = await benchP9(freshDatabase, Number(process.env.BENCH_P9_CARDS ?? 50));
      results.p9 = p9;
      for (const r of p9) {
        const name = `${r.platform === 'slack' ? 'Slack (HTTP)' : 'Discord'} (${r.concurrency} slots)`;
        const ms = (s: { p50: number; p99: number }) => `${round(s.p50, 0)} / ${round(s.p99, 0)}`;
        rows.push(
          [
            `P9 ${name}, ${r.cards} cards clicked at once: click → ack p50 / p99 (ms)`,
            ms(r.ack),
            '',
            '',
            'p99 ≤ 100 ms',
          ],
          [`P9 ${name}: click → card shows the decision p50 / p99 (ms)`, ms(r.decided), '', '', ''],
          [
            `P9 ${name}: click → continuation's first visible change p50 / p99 (ms)`,
            ms(r.firstChange),
            `edit interval ${r.editIntervalMs} ms${r.updatesPerMinute ? `, ${r.updatesPerMinute} chat.update/min` : ''}`,
            `${round(r.firstChange.p50 / (300 + r.editIntervalMs))}× of target`,
            `p50 ≤ 300 ms + ${r.editIntervalMs} ms`,
          ],
          [`P9 ${name}: click → the answer is visible p50 / p99 (ms)`, ms(r.answer), '', '', ''],
          [
            `P9 ${name}: click → the last answer visible (ms)`,
            round(r.lastAnswer, 0),
            r.updatesPerMinute ? `${r.cards} × 60 s / ${r.updatesPerMinute} + 2 s` : '',
            r.updatesPerMinute ? `${round(r.lastAnswer / ((r.cards * 60_000) / r.updatesPerMinute + 2000))}×` : '',
            r.updatesPerMinute ? '≤ 1×' : '',
          ],
          [`P9 ${name}: slot held per continuation p50 / p99 (ms)`, ms(r.slotHeld), '', '', 'free ≤ 1 s after compute'],
          [
            `P9 ${name}: 429s from the click on / seconds in all`,
            `${r.rateLimited} / ${round(r.seconds, 0)}`,
            '',
            '',
            '',
          ],
        );
      }
    }
    if (only.includes('P10')) {
      const p10 = await benchP10(await freshDatabase('p10'), Number(process.env.BENCH_P9_CARDS ?? 50));
      results.p10 = p10;
      const ms = (s: { p50: number; p99: number }) => `${round(s.p50, 0)} / ${round(s.p99, 0)}`;
      const ratio = (a: { p50: number; p99: number }, b: { p50: number; p99: number }) =>
        `${round(a.p50 / b.p50)}× / ${round(a.p99 / b.p99)}×`;
      const { burst } = p10;
      rows.push(
        [
          `P10 Slack mention in other workspaces → first visible token during A's ${burst.cards}-click burst, p50 / p99 of ${p10.slackB.burst.n} (ms)`,
          ms(p10.slackB.burst),
          `no burst: ${ms(p10.slackB.quiet)}`,
          ratio(p10.slackB.burst, p10.slackB.quiet),
          '≤ 1.25×',
        ],
        [
          `P10 Discord mention → first visible token during the burst, p50 / p99 of ${p10.discord.burst.n} (ms)`,
          ms(p10.discord.burst),
          `no burst: ${ms(p10.discord.quiet)}`,
          ratio(p10.discord.burst, p10.discord.quiet),
          '≤ 1.25×',
        ],
        [
          `P10 workspace A (${p10.concurrency} slots): click → answer p50 / p99, last (ms)`,
          `${ms(burst.answer)}, ${round(burst.lastAnswer, 0)}`,
          `${burst.cards} × 60 s / ${burst.updatesPerMinute} + 2 s`,
          `${round(burst.lastAnswer / ((burst.cards * 60_000) / burst.updatesPerMinute + 2000))}×`,
          '≤ 1×',
        ],
        [`P10 workspace A: slot held per continuation p50 / p99 (ms)`, ms(burst.slotHeld), '', '', ''],
        [
          `P10 the mentions sent ${round(p10.offsetMs, 0)} ms after A's clicks: Slack / Discord (ms)`,
          `${round(p10.slackB.samples[0]!, 0)} / ${round(p10.discord.samples[0]!, 0)}`,
          `no burst p50: ${round(p10.slackB.quiet.p50, 0)} / ${round(p10.discord.quiet.p50, 0)}`,
          '',
          '',
        ],
      );
    }
    if (only.includes('FILES')) {
      const files = await benchFiles();
      results.files = files;
      for (const f of files) rows.push([`FILES ${f.input}, ${f.bytes} B (ms)`, f.ms, f.outcome, '', '< 1000 ms']);
    }
    if (only.includes('BUDGET')) {
      const budget = benchBudget();
      results.budget = budget;
      for (const f of budget) {
        rows.push([`BUDGET fitToBudget, ${f.chars / 1e6} MB ${f.shape} (ms)`, f.ms, '', '', 'linear in size']);
      }
    }
    if (only.includes('SPEND')) {
      const turns = Number(process.env.BENCH_TURNS ?? 1000);
      const spend = await benchSpend(freshDatabase, samples, turns);
      results.spend = spend;
      const best = (xs: number[]) => Math.max(...xs);
      const ratio = best(spend.p4.with) / best(spend.p4.without);
      rows.push(
        ['SPEND reserve + settle per model call p50 (ms)', round(spend.reserveSettle.p50), '', '', '≤ 2'],
        ['SPEND reserve + settle per model call p99 (ms)', round(spend.reserveSettle.p99), '', '', ''],
        ['SPEND the same through a lease p50 (ms)', round(spend.reserveSettleLeased.p50), '', '', '≤ 2'],
        ['SPEND the same through a lease p99 (ms)', round(spend.reserveSettleLeased.p99), '', '', ''],
        [
          `SPEND P4 turns/s with a budget (best of ${spend.p4.with.length}) vs without`,
          round(best(spend.p4.with)),
          round(best(spend.p4.without)),
          String(round(ratio)),
          '≥ 0.9',
        ],
        [
          `SPEND ${spend.concurrent.turns} turns at once, ${spend.concurrent.limit.toLocaleString('en')}-token budget: share spent before the first refusal (calls answered)`,
          `${Math.round(spend.concurrent.shareBeforeRefusal * 100)}% (${spend.concurrent.answered})`,
          '',
          '',
          '≥ 75%',
        ],
      );
    }
    if (only.includes('SCHEDULES')) {
      const sched = await benchSchedules(freshDatabase, Number(process.env.BENCH_SCHEDULES ?? 1000));
      results.schedules = sched;
      rows.push([
        `SCHEDULES ${sched.schedules} slots due at once → work items per second, owner's groups looked up again (${sched.listings} usergroups.list) vs as stored`,
        round(sched.lookedUpPerSecond, 1),
        round(sched.storedPerSecond, 1),
        String(round(sched.lookedUpPerSecond / sched.storedPerSecond)),
        '≥ 0.8, one listing',
      ]);
    }
    if (only.includes('MRKDWN')) {
      const mrkdwn = benchMrkdwn();
      results.mrkdwn = mrkdwn;
      for (const f of mrkdwn) {
        rows.push([
          `MRKDWN Markdown → Slack mrkdwn, ${f.chars} chars, ${f.shape} (ms)`,
          f.ms,
          '',
          '',
          '< 1000 at 80,000',
        ]);
      }
    }
    const table = [
      '| figure | countersign | baseline | ratio | target |',
      '|---|---|---|---|---|',
      ...rows.map((r) => `| ${r.join(' | ')} |`),
    ].join('\n');
    process.stdout.write(
      `\n${table}\n\nbaselines, measured in this run: P1 raw graphile-worker add_job → task start (n=${samples}); P4 a direct bot (same model and outbound, no queue, no persistence)\n`,
    );
    mkdirSync(path.resolve('bench', 'results'), { recursive: true });
    const file = path.resolve('bench', 'results', `bench-${new Date().toISOString().replaceAll(':', '-')}.json`);
    writeFileSync(file, JSON.stringify({ at: new Date().toISOString(), node: process.version, ...results }, null, 2));
    process.stdout.write(`wrote ${path.relative(process.cwd(), file)}\n`);
  } finally {
    for (const name of databases)
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
    await embedded?.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
