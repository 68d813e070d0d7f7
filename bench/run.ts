import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/db/embedded.ts';
import { migrate } from '../src/db/migrate.ts';
import { createLogger } from '../src/log.ts';
import { benchP1 } from './p1-event-to-start.ts';
import { round } from './stats.ts';

/**
 * `npm run bench`: measures Countersign against raw baselines taken in the same run, on a real
 * Postgres (DATABASE_URL, or an embedded one) over loopback. Prints a markdown table and writes JSON
 * to bench/results/.
 */
async function main(): Promise<void> {
  const log = createLogger('warn');
  let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    embedded = await startEmbeddedPostgres({ dir: path.resolve('.data', 'bench-postgres'), ephemeral: true, log });
    adminUrl = embedded.adminUrl;
  }
  const dbName = `cs_bench_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(adminUrl);
  url.pathname = `/${dbName}`;
  const connectionString = url.toString();
  try {
    await migrate(connectionString, log);
    const samples = Number(process.env.BENCH_SAMPLES ?? 200);
    const p1 = await benchP1(connectionString, samples);

    const rows = [
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
    ];
    const table = [
      '| figure | countersign | baseline | ratio | target |',
      '|---|---|---|---|---|',
      ...rows.map((r) => `| ${r.join(' | ')} |`),
    ].join('\n');
    process.stdout.write(
      `\n${table}\n\nbaseline: raw graphile-worker add_job → task start, same database, same run; n=${samples}\n`,
    );
    mkdirSync(path.resolve('bench', 'results'), { recursive: true });
    const file = path.resolve('bench', 'results', `bench-${new Date().toISOString().replaceAll(':', '-')}.json`);
    writeFileSync(file, JSON.stringify({ at: new Date().toISOString(), node: process.version, samples, p1 }, null, 2));
    process.stdout.write(`wrote ${path.relative(process.cwd(), file)}\n`);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
    await embedded?.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
