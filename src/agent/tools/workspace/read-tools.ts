import { realpath } from 'node:fs/promises';
import { z } from 'zod';
import { defineBuiltinTool, type ToolOutput } from '../tool.ts';
import { PathArg, type WorkspaceAccess, type WorkspaceOf } from './access.ts';
import { displayPath, WORKSPACE_LIMITS } from './confine.ts';
import { describeFailure, readText, requireFolder, walk } from './files.ts';

const ListArgs = z.object({
  path: PathArg.default('.'),
  recursive: z
    .boolean()
    .default(false)
    .describe(`List sub-folders too (at most ${WORKSPACE_LIMITS.listEntries} entries)`),
});
type ListArgs = z.infer<typeof ListArgs>;
const ReadArgs = z.object({
  path: PathArg,
  fromLine: z.number().int().positive().optional().describe('First line to return (1-based)'),
  toLine: z.number().int().positive().optional().describe('Last line to return (inclusive)'),
});
type ReadArgs = z.infer<typeof ReadArgs>;

export function listFilesTool(ws: WorkspaceOf) {
  return defineBuiltinTool({
    name: 'list_files',
    kind: 'read',
    description: 'Lists the files and folders in a workspace folder (folders end in "/", links in "@").',
    version: '2',
    input: ListArgs,
    approval: 'never',
    risk: 'low',
    idempotent: true,
    execute: (args, ctx) => listFiles(ws(ctx), args),
  });
}

async function listFiles(ws: WorkspaceAccess, { path: p, recursive }: ListArgs): Promise<ToolOutput | string> {
  try {
    const dir = await ws.resolve(p);
    await requireFolder(dir);
    const { entries, complete } = await walk(dir, { recursive, limit: WORKSPACE_LIMITS.listEntries, skip: ws.hides });
    const base = await realpath(ws.root);
    const lines = entries.map(
      (e) => displayPath(base, e.absolute) + (e.kind === 'dir' ? '/' : e.kind === 'link' ? '@' : ''),
    );
    if (!complete) {
      lines.push(`[stopped after ${WORKSPACE_LIMITS.listEntries} entries; list a sub-folder to see more]`);
    }
    return lines.length ? lines.join('\n') : '(empty folder)';
  } catch (error) {
    return describeFailure(error);
  }
}

export function readFileTool(ws: WorkspaceOf) {
  return defineBuiltinTool({
    name: 'read_file',
    kind: 'read',
    description: `Reads a text file from the workspace (at most ${WORKSPACE_LIMITS.readBytes} bytes), optionally only a range of lines.`,
    version: '2',
    input: ReadArgs,
    approval: 'never',
    risk: 'low',
    idempotent: true,
    execute: (args, ctx) => readFile(ws(ctx), args),
  });
}

async function readFile(ws: WorkspaceAccess, { path: p, fromLine, toLine }: ReadArgs): Promise<ToolOutput | string> {
  try {
    const text = await readText(await ws.resolve(p));
    if (typeof text !== 'string' || (fromLine === undefined && toLine === undefined)) return text;
    const lines = text.split('\n');
    if (text.endsWith('\n')) lines.pop();
    const from = fromLine ?? 1;
    if (from > lines.length) {
      return { content: `The file has ${lines.length} lines; fromLine ${from} is past its end.`, isError: true };
    }
    if (toLine !== undefined && toLine < from) {
      return { content: 'toLine must not be smaller than fromLine.', isError: true };
    }
    return lines.slice(from - 1, toLine ?? lines.length).join('\n');
  } catch (error) {
    return describeFailure(error);
  }
}
