import { WORK_COMMAND_USAGE, type WorkCommandName, type WorkCommandResult } from '../core/work-commands.ts';
import { Priority } from '../core/work-item.ts';
import { BRANCH, type RepoCatalog } from './repos-config.ts';

/**
 * `/code REPO TASK`, `/review REPO BRANCH [focus]`, `/research TOPIC` read into the work item each
 * starts (docs/code-work.md): CODE at NORMAL, in the background pool, so interactive chat never
 * waits behind it; REVIEW at HIGH; RESEARCH at LOW. An unknown repository lists the known ones.
 */
export function readWorkCommand(
  catalog: RepoCatalog | undefined,
  command: Exclude<WorkCommandName, 'schedule'>,
  text: string,
): WorkCommandResult {
  const words = text.trim().split(/\s+/).filter(Boolean);
  const usage = `Usage: /${command} ${WORK_COMMAND_USAGE[command].args}`;
  if (command === 'research') {
    const topic = text.trim();
    if (!topic) return { ok: false, message: `${usage} — what should I research?` };
    return {
      ok: true,
      header: `Researching in the background: ${preview(topic)}`,
      type: 'RESEARCH',
      priority: Priority.LOW,
      prompt: `Research this in depth and report what you found, with sources where you have them:\n\n${topic}`,
      payload: {},
    };
  }
  const [repoName = '', ...rest] = words;
  if (!repoName) return { ok: false, message: `${usage}` };
  if (!catalog) return { ok: false, message: 'No repositories are configured here (REPOS or REPOS_FILE).' };
  const found = catalog.get(repoName);
  if (!found.ok) return { ok: false, message: found.reason };
  const repo = found.repo.name;
  if (command === 'code') {
    const task = text.trim().slice(repoName.length).trim();
    if (!task) return { ok: false, message: `${usage} — what should I change in ${repo}?` };
    return {
      ok: true,
      header: `Working on ${repo}: ${preview(task)}`,
      type: 'CODE',
      priority: Priority.NORMAL,
      prompt: task,
      payload: { repo },
    };
  }
  const [branch = '', ...focus] = rest;
  if (!BRANCH.test(branch)) return { ok: false, message: `${usage} — which branch of ${repo}? (e.g. feature/login)` };
  const notes = focus.join(' ');
  return {
    ok: true,
    header: `Reviewing ${branch} of ${repo}`,
    type: 'REVIEW',
    priority: Priority.HIGH,
    prompt: `Review the branch ${branch} of ${repo} against its base.${notes ? ` Pay attention to: ${notes}` : ''}`,
    payload: { repo, branch },
  };
}

function preview(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
