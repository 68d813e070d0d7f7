import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { defineTool, type AnyTool, type ToolOutput } from '../tool.ts';
import { unifiedDiff } from './diff.ts';
import { displayPath, looksBinary, resolveInWorkspace, WORKSPACE_LIMITS, WorkspacePathError } from './confine.ts';

const PathArg = z.string().min(1).max(WORKSPACE_LIMITS.pathChars).describe('Path relative to the workspace root');

function refused(error: unknown): ToolOutput {
  if (error instanceof WorkspacePathError) return { content: error.message, isError: true };
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return { content: 'No such file or directory in the workspace.', isError: true };
  if (code === 'EISDIR') return { content: 'That is a directory, not a file.', isError: true };
  if (code === 'ENOTDIR') return { content: 'A part of that path is a file, not a directory.', isError: true };
  return { content: `The workspace operation failed (${code ?? 'error'}).`, isError: true };
}

async function readText(file: string): Promise<string | ToolOutput> {
  const info = await stat(file);
  if (info.isDirectory()) return { content: 'That is a directory; use list_files.', isError: true };
  if (info.size > WORKSPACE_LIMITS.readBytes) {
    return {
      content: `The file is ${info.size} bytes; files over ${WORKSPACE_LIMITS.readBytes} bytes are not read.`,
      isError: true,
    };
  }
  const bytes = await readFile(file);
  if (looksBinary(bytes))
    return { content: 'That file is binary; only text files can be read or edited.', isError: true };
  return bytes.toString('utf8');
}

/** Writes through a temporary file and a rename, so a crash never leaves half a file. */
async function writeAtomically(file: string, content: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString('hex')}.tmp`);
  await writeFile(temp, content, 'utf8');
  await rename(temp, file);
}

/** The workspace tools, rooted at `root`: reading needs no approval, changing asks first. */
export function createWorkspaceTools(root: string): AnyTool[] {
  const resolve = (p: string) => resolveInWorkspace(root, p);

  const listFiles = defineTool({
    name: 'list_files',
    description: 'Lists files and folders in the workspace (optionally recursively).',
    version: '1',
    input: z.object({ path: PathArg.default('.'), recursive: z.boolean().default(false) }),
    approval: 'never',
    risk: 'low',
    idempotent: true,
    async execute({ path: p, recursive }) {
      try {
        const dir = await resolve(p);
        const entries = await readdir(dir, { withFileTypes: true, recursive });
        const lines = entries
          .filter((e) => !e.name.startsWith('.') || p !== '.')
          .map((e) => {
            const full = path.join(e.parentPath, e.name);
            return `${displayPath(root, full)}${e.isDirectory() ? '/' : ''}`;
          })
          .sort();
        const shown = lines.slice(0, WORKSPACE_LIMITS.listEntries);
        const more = lines.length - shown.length;
        return shown.length ? `${shown.join('\n')}${more > 0 ? `\n… and ${more} more` : ''}` : '(empty)';
      } catch (error) {
        return refused(error);
      }
    },
  });

  const readFileTool = defineTool({
    name: 'read_file',
    description: 'Reads a text file from the workspace, optionally only some lines (1-based, inclusive).',
    version: '1',
    input: z.object({
      path: PathArg,
      fromLine: z.number().int().positive().optional(),
      toLine: z.number().int().positive().optional(),
    }),
    approval: 'never',
    risk: 'low',
    idempotent: true,
    async execute({ path: p, fromLine, toLine }) {
      try {
        const text = await readText(await resolve(p));
        if (typeof text !== 'string') return text;
        if (!fromLine && !toLine) return text;
        const lines = text.split('\n');
        return lines.slice((fromLine ?? 1) - 1, toLine ?? lines.length).join('\n');
      } catch (error) {
        return refused(error);
      }
    },
  });

  const searchFiles = defineTool({
    name: 'search_files',
    description:
      'Searches the text files of the workspace for a string (or a regular expression) and returns matching lines.',
    version: '1',
    input: z.object({
      query: z.string().min(1).max(500),
      regex: z.boolean().default(false),
      path: PathArg.default('.'),
    }),
    approval: 'never',
    risk: 'low',
    idempotent: true,
    async execute({ query, regex, path: p }) {
      let pattern: RegExp;
      try {
        pattern = regex ? new RegExp(query, 'i') : new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
      } catch (error) {
        return { content: `Invalid regular expression: ${(error as Error).message}`, isError: true };
      }
      try {
        const dir = await resolve(p);
        const entries = await readdir(dir, { withFileTypes: true, recursive: true });
        const matches: string[] = [];
        for (const e of entries) {
          if (!e.isFile() || matches.length >= WORKSPACE_LIMITS.searchMatches) continue;
          const full = path.join(e.parentPath, e.name);
          const info = await stat(full);
          if (info.size > WORKSPACE_LIMITS.readBytes) continue;
          const bytes = await readFile(full);
          if (looksBinary(bytes)) continue;
          bytes
            .toString('utf8')
            .split('\n')
            .forEach((line, i) => {
              if (matches.length < WORKSPACE_LIMITS.searchMatches && pattern.test(line)) {
                matches.push(`${displayPath(root, full)}:${i + 1}: ${line.slice(0, 300)}`);
              }
            });
        }
        return matches.length ? matches.join('\n') : 'No matches.';
      } catch (error) {
        return refused(error);
      }
    },
  });

  const writeFileTool = defineTool({
    name: 'write_file',
    description: 'Creates or overwrites a text file in the workspace. A person approves the change first.',
    version: '1',
    input: z.object({ path: PathArg, content: z.string().max(WORKSPACE_LIMITS.writeBytes) }),
    approval: 'always',
    risk: 'medium',
    idempotent: false,
    async describeForApproval({ path: p, content }) {
      const file = await resolve(p);
      const before = await readText(file).catch(() => '');
      return unifiedDiff(typeof before === 'string' ? before : '', content, `a/${p}`, `b/${p}`);
    },
    async execute({ path: p, content }) {
      try {
        const file = await resolve(p);
        await writeAtomically(file, content);
        return `Wrote ${Buffer.byteLength(content)} bytes to ${displayPath(root, file)}.`;
      } catch (error) {
        return refused(error);
      }
    },
  });

  const editFile = defineTool({
    name: 'edit_file',
    description:
      'Replaces exact text in a workspace file. old_text must occur exactly once unless replace_all is true. A person approves the change first.',
    version: '1',
    input: z.object({
      path: PathArg,
      old_text: z.string().min(1),
      new_text: z.string(),
      replace_all: z.boolean().default(false),
    }),
    approval: 'always',
    risk: 'medium',
    idempotent: false,
    async describeForApproval(args) {
      const file = await resolve(args.path);
      const before = await readText(file);
      if (typeof before !== 'string') return undefined;
      const after = applyEdit(before, args);
      return typeof after === 'string' ? unifiedDiff(before, after, `a/${args.path}`, `b/${args.path}`) : after.content;
    },
    async execute(args) {
      try {
        const file = await resolve(args.path);
        const before = await readText(file);
        if (typeof before !== 'string') return before;
        const after = applyEdit(before, args);
        if (typeof after !== 'string') return after;
        await writeAtomically(file, after);
        return `Edited ${displayPath(root, file)}.`;
      } catch (error) {
        return refused(error);
      }
    },
  });

  const deleteFile = defineTool({
    name: 'delete_file',
    description: 'Deletes a file from the workspace. A person approves it first.',
    version: '1',
    input: z.object({ path: PathArg }),
    approval: 'always',
    risk: 'high',
    idempotent: false,
    async describeForApproval({ path: p }) {
      const file = await resolve(p);
      const info = await stat(file).catch(() => undefined);
      if (!info) return 'The file does not exist.';
      const text = await readText(file);
      const head = typeof text === 'string' ? text.split('\n').slice(0, 10).join('\n') : '(binary)';
      return `Deletes ${p} (${info.size} bytes). It begins:\n${head}`;
    },
    async execute({ path: p }) {
      try {
        const file = await resolve(p);
        const info = await stat(file);
        if (info.isDirectory()) return { content: 'That is a directory; only files can be deleted.', isError: true };
        await rm(file);
        return `Deleted ${displayPath(root, file)}.`;
      } catch (error) {
        return refused(error);
      }
    },
  });

  return [listFiles, readFileTool, searchFiles, writeFileTool, editFile, deleteFile];
}

function applyEdit(
  text: string,
  { old_text, new_text, replace_all }: { old_text: string; new_text: string; replace_all: boolean },
): string | ToolOutput {
  const count = text.split(old_text).length - 1;
  if (count === 0)
    return { content: 'old_text was not found in the file; read it again and copy the text exactly.', isError: true };
  if (count > 1 && !replace_all) {
    return {
      content: `old_text occurs ${count} times; add surrounding lines to make it unique, or set replace_all.`,
      isError: true,
    };
  }
  return replace_all ? text.split(old_text).join(new_text) : text.replace(old_text, () => new_text);
}
