import { normaliseWorkspacePath } from './glob.ts';

/** Arguments that name workspace paths. `cwd` is where a program runs, not what it touches. */
export const PATH_ARGS = [
  'path',
  'file',
  'file_path',
  'filePath',
  'filename',
  'dir',
  'directory',
  'source',
  'destination',
  'target',
  'src',
  'dest',
  'from',
  'to',
] as const;
export const PATH_LIST_ARGS = ['paths', 'files'] as const;

export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function pathsOf(args: unknown): string[] {
  if (!isRecord(args)) return [];
  const out: string[] = [];
  for (const key of PATH_ARGS) if (typeof args[key] === 'string') out.push(args[key]);
  for (const key of PATH_LIST_ARGS) {
    const list = args[key];
    if (Array.isArray(list)) for (const item of list) if (typeof item === 'string') out.push(item);
  }
  return out.map(normaliseWorkspacePath);
}

/** run_command's argv (`command`), as a list: a string is split on whitespace. */
export function commandOf(args: unknown): string[] | undefined {
  if (!isRecord(args)) return undefined;
  const command = args.command;
  if (typeof command === 'string') return command.trim().split(/\s+/).filter(Boolean);
  if (Array.isArray(command) && command.every((a) => typeof a === 'string')) return command;
  return undefined;
}
