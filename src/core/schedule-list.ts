/**
 * `/countersign schedules` (docs/schedules.md), as every platform shows it: a heading, then one entry
 * per schedule — its line of text, and whether it is paused (Resume) or not (Pause) — each with a
 * Delete button too. Button values come from `scheduleButtonValue` (core/buttons.ts).
 */
export interface ScheduleListing {
  heading: string;
  entries: Array<{ id: string; text: string; paused: boolean }>;
}
