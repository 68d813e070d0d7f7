import { JOBS, turnJobFor } from './tasks/index.ts';

/** Interactive work runs in its own pool of slots so it never waits behind background work. */
export const INTERACTIVE_TASK = JOBS.interactiveTurn.name;
export const BACKGROUND_TASK = JOBS.backgroundTurn.name;

/** The name of the turn task that runs a work item of this priority (tasks/index.ts). */
export function taskFor(priority: number): string {
  return turnJobFor(priority).name;
}
