import { Priority } from '../../core/work-item.ts';
import { JOBS } from '../tasks/index.ts';

/** The arguments that let the database pick a job's task from its priority the way `turnJobFor` does. */
export function taskRule(): [interactiveTask: string, backgroundTask: string, interactiveMaxPriority: number] {
  return [JOBS.interactiveTurn.name, JOBS.backgroundTurn.name, Priority.HIGH];
}
