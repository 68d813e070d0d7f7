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
  ingress: {
    events: Number(process.env.CHAOS_INGRESS_EVENTS ?? 60),
    arrivalMs: 6000,
    cutAfterMs: 1500,
    cutForMs: 3000,
    // Slack retries at once, after 1 minute and after 5; the same shape, shortened.
    retryDelaysMs: [500, 2000, 4000],
    lateRedeliveries: 10,
  },
  progress: (line) => process.stderr.write(`chaos: ${line}\n`),
});
const ok =
  figures.finished === figures.turns &&
  figures.failures.length === 0 &&
  figures.effectsRunTwice === 0 &&
  figures.effectsUnapproved === 0 &&
  figures.incompleteMessages.length === 0 &&
  figures.ingress.lost === 0 &&
  figures.ingress.duplicated === 0 &&
  figures.ingress.duplicateAnswers === 0 &&
  figures.ingress.answered === figures.ingress.events;
const ing = figures.ingress;
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
    `| Slack ingress without Postgres for (s) | ${(ing.cutMs / 1000).toFixed(1)} |`,
    `| Slack events sent / first sent during the cut | ${ing.events} / ${ing.sentDuringCut} |`,
    `| HTTP deliveries (retries and late redeliveries included) / answered non-2xx or not at all | ${ing.deliveries} / ${ing.refused} |`,
    `| events acknowledged | ${ing.acknowledged} |`,
    `| retries found already taken / late redeliveries of acknowledged events (acked) | ${ing.retriesFoundTaken} / ${ing.lateRedeliveries} (${ing.lateAcknowledged}) |`,
    `| turns (work items) made | ${ing.workItems} |`,
    `| events lost / turns duplicated | ${ing.lost} / ${ing.duplicated} |`,
    `| threads with exactly one answer / answers posted twice | ${ing.answered} / ${ing.duplicateAnswers} |`,
    `| stray "…" placeholders (a kill between post and record) | ${ing.strayPlaceholders} |`,
    `| Slack ingress restarts | ${ing.ingressRestarts} |`,
    `| seconds | ${figures.seconds.toFixed(1)} |`,
    ...figures.failures.map((f) => `| failed: ${f.conversation} | ${f.status}: ${f.error ?? ''} |`),
    '',
  ].join('\n'),
);
process.exit(ok ? 0 : 1);
