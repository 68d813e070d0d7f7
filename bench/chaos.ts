import { runChaos } from './chaos-core.ts';

/** `npm run chaos`: the full chaos run; prints its figures and exits 1 if any invariant broke. */
const turns = Number(process.env.CHAOS_TURNS ?? 100);
const figures = await runChaos({
  turns,
  workers: Number(process.env.CHAOS_WORKERS ?? 3),
  kills: Number(process.env.CHAOS_KILLS ?? 8),
  restartPostgres: true,
  approveRatio: 0.8,
  arrivalMs: Number(process.env.CHAOS_ARRIVAL_MS ?? 20_000),
  timeoutMs: Number(process.env.CHAOS_TIMEOUT_MS ?? 600_000),
  progress: (line) => process.stderr.write(`chaos: ${line}\n`),
});
const ok =
  figures.finished === figures.turns &&
  figures.failures.length === 0 &&
  figures.effectsRunTwice === 0 &&
  figures.effectsUnapproved === 0 &&
  figures.incompleteMessages.length === 0;
process.stdout.write(
  [
    '| figure | value |',
    '|---|---|',
    `| turns | ${figures.turns} |`,
    `| finished | ${figures.finished} |`,
    `| approved / denied | ${figures.approved} / ${figures.denied} |`,
    `| approved effects that ran exactly once | ${figures.effectsRunOnce} |`,
    `| effects that ran twice | ${figures.effectsRunTwice} |`,
    `| effects that ran unapproved | ${figures.effectsUnapproved} |`,
    `| calls whose outcome a kill made unknown (not re-run) | ${figures.outcomeUnknown} |`,
    `| complete final messages | ${figures.completeMessages} |`,
    `| incomplete final messages | ${figures.incompleteMessages.length} |`,
    `| worker SIGKILLs | ${figures.kills} |`,
    `| Postgres restarts | ${figures.postgresRestarts} |`,
    `| seconds | ${figures.seconds.toFixed(1)} |`,
    ...figures.failures.map((f) => `| failed: ${f.conversation} | ${f.status}: ${f.error ?? ''} |`),
    '',
  ].join('\n'),
);
process.exit(ok ? 0 : 1);
