import type { Requester } from '../core/person.ts';
import { Priority } from '../core/work-item.ts';
import type { Queryable } from '../db/pool.ts';
import { activeWorkOf, type ActiveWork } from './turn-lifecycle.ts';

/**
 * `countersign status` / `/countersign status`: a person's running and queued work — type, priority,
 * age — in one message for them alone (docs/code-work.md).
 */
export async function workStatusText(db: Queryable, person: Requester): Promise<string> {
  const work = await activeWorkOf(db, person);
  if (work.length === 0) return 'You have no running or queued work.';
  return [`Your work (${work.length}${work.length === 20 ? '+' : ''}), oldest first:`, ...work.map(workLine)].join(
    '\n',
  );
}

/** `countersign status`: everyone's unfinished work (or one person's), each line naming who asked. */
export async function operatorStatusText(db: Queryable, person?: Requester): Promise<string> {
  const work = await activeWorkOf(db, person, 200);
  if (work.length === 0) return 'No running or queued work.';
  return work.map((w) => `${workLine(w)} (${w.requester}, ${w.conversationId})`).join('\n');
}

const PRIORITY_NAMES = new Map<number, string>(Object.entries(Priority).map(([name, value]) => [value, name]));

const STATUS_WORDS: Record<ActiveWork['status'], string> = {
  queued: 'queued',
  running: 'running',
  awaiting_approval: 'waiting for a click',
};

/** One line of the list: type · priority · status · age — what was asked. */
function workLine(work: ActiveWork): string {
  const priority = PRIORITY_NAMES.get(work.priority) ?? String(work.priority);
  const asked = work.prompt ? ` — ${oneLine(work.prompt)}` : '';
  return `• ${work.type} · ${priority} · ${STATUS_WORDS[work.status]} · ${age(work.ageSeconds)}${asked}`;
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

/** An age as people say it: 40 s, 3 min, 2 h, 5 d. */
export function age(seconds: number): string {
  if (seconds < 60) return `${Math.max(0, seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86_400)} d`;
}
