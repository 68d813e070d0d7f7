import { realpath, rm, stat } from 'node:fs/promises';
import { z } from 'zod';
import { defineTool, type AnyTool, type ToolOutput } from '../tool.ts';
import { displayPath, looksBinary, resolveInWorkspace, WORKSPACE_LIMITS } from './confine.ts';
import { unifiedDiff } from './diff.ts';
import {
  describeFailure,
  NotRegularFileError,
  openRegularFile,
  readText,
  requireFolder,
  requireRegularFile,
  walk,
  writeAtomically,
} from './files.ts';
import { compileLinePattern, SearchPatternError, type LinePattern } from './pattern.ts';

const PathArg = z.string().min(1).max(WORKSPACE_LIMITS.pathChars).describe('Path relative to the workspace root');

const ListArgs = z.object({
  path: PathArg.default('.'),
  recursive: z
    .boolean()
    .default(false)
    .describe(`List sub-folders too (at most ${WORKSPACE_LIMITS.listEntries} entries)`),
});
const ReadArgs = z.object({
  path: PathArg,
  fromLine: z.number().int().positive().optional().describe('First line to return (1-based)'),
  toLine: z.number().int().positive().optional().describe('Last line to return (inclusive)'),
});
const SearchArgs = z.object({
  query: z.string().min(1).max(500),
  regex: z
    .boolean()
    .default(false)
    .describe('Treat query as a regular expression (RE2 syntax: no backreferences, no lookaround)'),
  caseSensitive: z.boolean().default(false),
  path: PathArg.default('.').describe('Folder to search in'),
});
const WriteArgs = z.object({
  path: PathArg,
  content: z.string().describe(`The whole new content (at most ${WORKSPACE_LIMITS.writeBytes} bytes)`),
});
const EditArgs = z.object({
  path: PathArg,
  old_text: z.string().min(1).describe('Text to replace, copied exactly from the file'),
  new_text: z.string(),
  replace_all: z.boolean().default(false).describe('Replace every occurrence instead of exactly one'),
});
type EditArgs = z.infer<typeof EditArgs>;
const DeleteArgs = z.object({ path: PathArg });

/** A line this long is searched and shown only in part (a minified file would swamp the result). */
const SEARCH_LINE_CHARS = 10_000;
const SHOWN_LINE_CHARS = 300;
const DELETE_PREVIEW_LINES = 10;
const INVALID_FOR_CARD = 'These arguments are not valid for this tool; it will refuse them.';
const PREVIEW_UNAVAILABLE = 'The preview could not be prepared in time; check the file before approving.';

/**
 * An approval card's preview, or a note once the card's signal aborts (its deadline): a slow disk or
 * a huge file must not hold the card back.
 */
async function previewWithin(signal: AbortSignal, prepare: () => Promise<string>): Promise<string> {
  if (signal.aborted) return PREVIEW_UNAVAILABLE;
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<string>((resolve) => {
    onAbort = () => resolve(PREVIEW_UNAVAILABLE);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  const preparing = prepare();
  preparing.catch(() => undefined); // an abandoned preview may still fail later
  try {
    return await Promise.race([preparing, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

function tooLarge(content: string): ToolOutput | undefined {
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes <= WORKSPACE_LIMITS.writeBytes) return undefined;
  return {
    content: `The content is ${bytes} bytes; files over ${WORKSPACE_LIMITS.writeBytes} bytes are not written.`,
    isError: true,
  };
}

/**
 * A file's bytes for searching, or why it is skipped. Opened race-free (see openRegularFile): an
 * entry listed as a file but swapped for a FIFO can't block the search.
 */
async function readSearchable(file: string): Promise<Buffer | 'too large' | 'not regular'> {
  let opened: Awaited<ReturnType<typeof openRegularFile>>;
  try {
    opened = await openRegularFile(file);
  } catch (error) {
    if (error instanceof NotRegularFileError) return 'not regular';
    throw error;
  }
  try {
    if (opened.info.size > WORKSPACE_LIMITS.readBytes) return 'too large';
    return await opened.handle.readFile();
  } finally {
    await opened.handle.close();
  }
}

/** Replaces exactly one occurrence (or all, when asked), or explains why it can't. */
export function applyEdit(
  text: string,
  { old_text, new_text, replace_all }: Omit<EditArgs, 'path'>,
): string | ToolOutput {
  const count = text.split(old_text).length - 1;
  if (count === 0) {
    return {
      content:
        'old_text was not found in the file. Read the file again and copy the text exactly, including spaces and line breaks.',
      isError: true,
    };
  }
  if (count > 1 && !replace_all) {
    return {
      content: `old_text occurs ${count} times in the file. Include more surrounding lines to pick one, or set replace_all to change every occurrence.`,
      isError: true,
    };
  }
  return replace_all ? text.split(old_text).join(new_text) : text.replace(old_text, () => new_text);
}

/**
 * The workspace tools, confined to `root`: listing, reading and searching run at once; writing,
 * editing and deleting ask a person first, showing a unified diff (or the file) on the card.
 */
export function createWorkspaceTools(root: string): AnyTool[] {
  const resolve = (p: string) => resolveInWorkspace(root, p);
  // Resolved paths are under the root's real path; show them relative to that.
  const show = async (absolute: string) => displayPath(await realpath(root), absolute);

  const listFiles = defineTool({
    name: 'list_files',
    description: 'Lists the files and folders in a workspace folder (folders end in "/", links in "@").',
    version: '2',
    input: ListArgs,
    approval: 'never',
    risk: 'low',
    idempotent: true,
    async execute({ path: p, recursive }) {
      try {
        const dir = await resolve(p);
        await requireFolder(dir);
        const { entries, complete } = await walk(dir, { recursive, limit: WORKSPACE_LIMITS.listEntries });
        const base = await realpath(root);
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
    },
  });

  const readFileTool = defineTool({
    name: 'read_file',
    description: `Reads a text file from the workspace (at most ${WORKSPACE_LIMITS.readBytes} bytes), optionally only a range of lines.`,
    version: '2',
    input: ReadArgs,
    approval: 'never',
    risk: 'low',
    idempotent: true,
    async execute({ path: p, fromLine, toLine }) {
      try {
        const text = await readText(await resolve(p));
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
    },
  });

  const searchFiles = defineTool({
    name: 'search_files',
    description: `Searches the text files under a workspace folder for a string or a regular expression; returns "path:line: text" for up to ${WORKSPACE_LIMITS.searchMatches} matching lines.`,
    version: '3',
    input: SearchArgs,
    approval: 'never',
    risk: 'low',
    idempotent: true,
    async execute({ query, regex, caseSensitive, path: p }) {
      let pattern: LinePattern;
      try {
        pattern = compileLinePattern(query, { regex, caseSensitive });
      } catch (error) {
        if (error instanceof SearchPatternError) return { content: error.message, isError: true };
        throw error;
      }
      try {
        const dir = await resolve(p);
        await requireFolder(dir);
        const base = await realpath(root);
        const { entries, complete } = await walk(dir, { recursive: true, limit: WORKSPACE_LIMITS.searchFiles });
        const matches: string[] = [];
        let skipped = 0;
        let special = 0;
        for (const entry of entries) {
          if (entry.kind === 'other') special++;
          if (entry.kind !== 'file') continue;
          if (matches.length >= WORKSPACE_LIMITS.searchMatches) break;
          const bytes = await readSearchable(entry.absolute);
          if (bytes === 'too large') skipped++;
          if (bytes === 'not regular') special++;
          if (typeof bytes === 'string' || looksBinary(bytes)) continue;
          const lines = bytes.toString('utf8').split('\n');
          for (const [i, line] of lines.entries()) {
            if (!pattern.test(line.slice(0, SEARCH_LINE_CHARS))) continue;
            matches.push(`${displayPath(base, entry.absolute)}:${i + 1}: ${line.slice(0, SHOWN_LINE_CHARS)}`);
            if (matches.length >= WORKSPACE_LIMITS.searchMatches) break;
          }
        }
        const notes = [
          matches.length >= WORKSPACE_LIMITS.searchMatches
            ? `[stopped at ${WORKSPACE_LIMITS.searchMatches} matches; narrow the query or the folder]`
            : '',
          complete ? '' : `[searched only the first ${WORKSPACE_LIMITS.searchFiles} entries of the folder]`,
          skipped ? `[skipped ${skipped} files over ${WORKSPACE_LIMITS.readBytes} bytes]` : '',
          special ? `[skipped ${special} entries that are not regular files (pipes, sockets, devices)]` : '',
        ].filter(Boolean);
        return [...(matches.length ? matches : ['No matches.']), ...notes].join('\n');
      } catch (error) {
        return describeFailure(error);
      }
    },
  });

  const writeFileTool = defineTool({
    name: 'write_file',
    description:
      'Creates a text file in the workspace, or replaces its whole content (folders are created as needed). A person approves the change first.',
    version: '2',
    input: WriteArgs,
    approval: 'always',
    risk: 'medium',
    idempotent: false,
    async describeForApproval(raw, ctx) {
      // Approval cards pass the arguments as the model sent them; parse for defaults.
      const parsed = WriteArgs.safeParse(raw);
      if (!parsed.success) return INVALID_FOR_CARD;
      const { path: p, content } = parsed.data;
      return previewWithin(ctx.signal, async () => {
        try {
          const file = await resolve(p);
          const shown = await show(file);
          const existing = await stat(file).catch(() => undefined);
          // A pipe, socket or device is refused before anything tries to read it for the diff.
          if (existing && !existing.isDirectory()) requireRegularFile(existing);
          if (!existing) return unifiedDiff('', content, '/dev/null', `b/${shown}`) || `Creates ${shown} (empty).`;
          const before = await readText(file);
          if (typeof before !== 'string') return `Replaces ${shown}, which can't be shown: ${before.content}`;
          return (
            unifiedDiff(before, content, `a/${shown}`, `b/${shown}`) || `No change: ${shown} already has this content.`
          );
        } catch (error) {
          return describeFailure(error).content;
        }
      });
    },
    async execute({ path: p, content }) {
      const large = tooLarge(content);
      if (large) return large;
      try {
        const file = await resolve(p);
        await writeAtomically(file, content);
        return `Wrote ${Buffer.byteLength(content, 'utf8')} bytes to ${await show(file)}.`;
      } catch (error) {
        return describeFailure(error);
      }
    },
  });

  const editFile = defineTool({
    name: 'edit_file',
    description:
      'Replaces exact text in a workspace text file: old_text must occur exactly once unless replace_all is true. A person approves the change first.',
    version: '2',
    input: EditArgs,
    approval: 'always',
    risk: 'medium',
    idempotent: false,
    async describeForApproval(raw, ctx) {
      const parsed = EditArgs.safeParse(raw);
      if (!parsed.success) return INVALID_FOR_CARD;
      const args = parsed.data;
      return previewWithin(ctx.signal, async () => {
        try {
          const file = await resolve(args.path);
          const before = await readText(file);
          if (typeof before !== 'string') return before.content;
          const after = applyEdit(before, args);
          if (typeof after !== 'string') return after.content;
          const shown = await show(file);
          return unifiedDiff(before, after, `a/${shown}`, `b/${shown}`) || 'No change: new_text equals old_text.';
        } catch (error) {
          return describeFailure(error).content;
        }
      });
    },
    async execute(args) {
      try {
        const file = await resolve(args.path);
        const before = await readText(file);
        if (typeof before !== 'string') return before;
        const after = applyEdit(before, args);
        if (typeof after !== 'string') return after;
        const large = tooLarge(after);
        if (large) return large;
        await writeAtomically(file, after);
        const count = args.replace_all ? before.split(args.old_text).length - 1 : 1;
        return `Edited ${await show(file)} (${count} replacement${count === 1 ? '' : 's'}).`;
      } catch (error) {
        return describeFailure(error);
      }
    },
  });

  const deleteFile = defineTool({
    name: 'delete_file',
    description: 'Deletes a file from the workspace (not a folder). A person approves it first.',
    version: '2',
    input: DeleteArgs,
    approval: 'always',
    risk: 'high',
    idempotent: false,
    async describeForApproval(raw, ctx) {
      const parsed = DeleteArgs.safeParse(raw);
      if (!parsed.success) return INVALID_FOR_CARD;
      const { path: p } = parsed.data;
      return previewWithin(ctx.signal, async () => {
        try {
          const file = await resolve(p);
          const shown = await show(file);
          const info = await stat(file);
          if (info.isDirectory()) return `${shown} is a folder; only files can be deleted.`;
          requireRegularFile(info);
          const text = await readText(file);
          if (typeof text !== 'string') return `Deletes ${shown} (${info.size} bytes, not text).`;
          const lines = text.split('\n');
          if (text.endsWith('\n')) lines.pop();
          const head = lines.slice(0, DELETE_PREVIEW_LINES).join('\n');
          const more =
            lines.length > DELETE_PREVIEW_LINES ? `\n… (${lines.length - DELETE_PREVIEW_LINES} more lines)` : '';
          return `Deletes ${shown} (${info.size} bytes, ${lines.length} lines). It begins:\n${head}${more}`;
        } catch (error) {
          return describeFailure(error).content;
        }
      });
    },
    async execute({ path: p }) {
      try {
        const file = await resolve(p);
        const info = await stat(file);
        if (info.isDirectory()) return { content: 'That is a folder; only files can be deleted.', isError: true };
        requireRegularFile(info);
        await rm(file);
        return `Deleted ${await show(file)}.`;
      } catch (error) {
        return describeFailure(error);
      }
    },
  });

  return [listFiles, readFileTool, searchFiles, writeFileTool, editFile, deleteFile];
}
