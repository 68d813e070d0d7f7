import { WORK_COMMANDS, WORK_COMMAND_USAGE } from '../../core/work-commands.ts';

/**
 * The `/countersign` verbs Slack offers (src/adapters/slack/on-command.ts). The console takes each
 * under the same name, `/countersign status`, and as its short form, `/status`: one name per verb
 * whichever platform a person learnt it on.
 */
const COUNTERSIGN_VERBS = ['grants', 'status', 'budget', 'schedules', 'connect', 'connections', 'help'] as const;

/**
 * The line a `/countersign …` line stands for: `/countersign status` is `/status`; `/countersign`
 * alone, or with a verb it does not have, is `/help` (as on Slack). Any other line is itself.
 */
export function expandCountersign(line: string): string {
  const typed = /^\/countersign(?:\s+(\S+)(?:\s+([\s\S]*))?)?$/i.exec(line);
  if (!typed) return line;
  const verb = (typed[1] ?? '').toLowerCase();
  if (!(COUNTERSIGN_VERBS as readonly string[]).includes(verb)) return '/help';
  const rest = (typed[2] ?? '').trim();
  return rest ? `/${verb} ${rest}` : `/${verb}`;
}

/** What `/help` prints: every line the console answers itself, one per line. */
export function consoleHelp(): string {
  return [
    'Console commands (each also as /countersign VERB, the name Slack uses):',
    '  /help — this list',
    '  /new — start a new conversation (the one before keeps its work and history)',
    '  /status — your running, parked and queued work',
    '  /budget — the spend limits: used, reserved, left, reset',
    '  /grants — the standing grants ("Always allow here") that apply; /grants revoke ID revokes one',
    '  /schedules — your schedules; /schedules pause|resume|delete|history ID changes one',
    '  /connect SERVER — connect your own account to a per-person server; /connections lists yours',
    '  /skills — the skills I can run; /skill NAME INPUT runs one',
    ...WORK_COMMANDS.map((w) => `  /${w} ${WORK_COMMAND_USAGE[w].args} — ${WORK_COMMAND_USAGE[w].description}`),
    '  /attach PATH [MESSAGE] — send a file with a message',
    'Anything else is a message to me. At a card: y, n, a (always allow here), or the answer it asks for.',
    'Ctrl-C stops the running turn; Ctrl-D quits.',
  ].join('\n');
}
