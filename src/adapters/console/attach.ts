import path from 'node:path';
import type { FileRef } from '../../core/work-item.ts';
import type { ConsoleCommand } from './inbound.ts';

/** `/attach PATH [message]`, the path quoted when it has spaces. */
const ATTACH_LINE = /^\/attach(?:\s+(?:"([^"]+)"|(\S+)))?(?:\s+([\s\S]*))?$/;

/**
 * `/attach PATH [message]`: the file goes with the message, as a file sent on a chat platform does
 * (the worker reads it when the turn starts; src/files). The terminal is the operator's, so any file
 * they can read may be attached; it is copied into the workspace's inbox, never used in place.
 */
export function attachConsoleCommand(cwd: string = process.cwd()): ConsoleCommand {
  return async (line) => {
    const typed = ATTACH_LINE.exec(line);
    if (!typed) return undefined;
    const given = typed[1] ?? typed[2];
    if (!given) return { reply: 'Usage: /attach PATH [message] (quote a path that has spaces).' };
    const absolute = path.resolve(cwd, given);
    const file: FileRef = { id: absolute, name: path.basename(absolute), url: absolute };
    return { draft: { input: { prompt: (typed[3] ?? '').trim(), files: [file] } } };
  };
}
