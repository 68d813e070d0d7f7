import { realpath } from 'node:fs/promises';
import { z } from 'zod';
import { defineBuiltinTool, type ToolOutput } from '../tool.ts';
import { PathArg, type WorkspaceAccess, type WorkspaceOf } from './access.ts';
import { displayPath, looksBinary, WORKSPACE_LIMITS } from './confine.ts';
import { describeFailure, NotRegularFileError, openRegularFile, requireFolder, walk } from './files.ts';
import { compileLinePattern, SearchPatternError, type LinePattern } from './pattern.ts';

const SearchArgs = z.object({
  query: z.string().min(1).max(500),
  regex: z
    .boolean()
    .default(false)
    .describe('Treat query as a regular expression (RE2 syntax: no backreferences, no lookaround)'),
  caseSensitive: z.boolean().default(false),
  path: PathArg.default('.').describe('Folder to search in'),
});
type SearchArgs = z.infer<typeof SearchArgs>;

/** A line this long is searched and shown only in part (a minified file would swamp the result). */
const SEARCH_LINE_CHARS = 10_000;
const SHOWN_LINE_CHARS = 300;

export function searchFilesTool(ws: WorkspaceOf) {
  return defineBuiltinTool({
    name: 'search_files',
    kind: 'read',
    description: `Searches the text files under a workspace folder for a string or a regular expression; returns "path:line: text" for up to ${WORKSPACE_LIMITS.searchMatches} matching lines.`,
    version: '3',
    input: SearchArgs,
    approval: 'never',
    risk: 'low',
    idempotent: true,
    execute: (args, ctx) => searchFiles(ws(ctx), args),
  });
}

/** What a search found, and what it had to leave out. */
interface SearchTally {
  matches: string[];
  /** Files over the read limit. */
  skipped: number;
  /** Pipes, sockets, devices. */
  special: number;
}

async function searchFiles(
  ws: WorkspaceAccess,
  { query, regex, caseSensitive, path: p }: SearchArgs,
): Promise<ToolOutput | string> {
  let pattern: LinePattern;
  try {
    pattern = compileLinePattern(query, { regex, caseSensitive });
  } catch (error) {
    if (error instanceof SearchPatternError) return { content: error.message, isError: true };
    throw error;
  }
  try {
    const dir = await ws.resolve(p);
    await requireFolder(dir);
    const base = await realpath(ws.root);
    const { entries, complete } = await walk(dir, {
      recursive: true,
      limit: WORKSPACE_LIMITS.searchFiles,
      skip: ws.hides,
    });
    const tally: SearchTally = { matches: [], skipped: 0, special: 0 };
    for (const entry of entries) {
      if (entry.kind === 'other') tally.special++;
      if (entry.kind !== 'file') continue;
      if (tally.matches.length >= WORKSPACE_LIMITS.searchMatches) break;
      await searchFile(entry.absolute, displayPath(base, entry.absolute), pattern, tally);
    }
    return searchReport(tally, complete);
  } catch (error) {
    return describeFailure(error);
  }
}

/** Adds one file's matching lines (up to the match limit) to the tally, or counts it as skipped. */
async function searchFile(file: string, shown: string, pattern: LinePattern, tally: SearchTally): Promise<void> {
  const bytes = await readSearchable(file);
  if (bytes === 'too large') tally.skipped++;
  if (bytes === 'not regular') tally.special++;
  if (typeof bytes === 'string' || looksBinary(bytes)) return;
  const lines = bytes.toString('utf8').split('\n');
  for (const [i, line] of lines.entries()) {
    if (!pattern.test(line.slice(0, SEARCH_LINE_CHARS))) continue;
    tally.matches.push(`${shown}:${i + 1}: ${line.slice(0, SHOWN_LINE_CHARS)}`);
    if (tally.matches.length >= WORKSPACE_LIMITS.searchMatches) break;
  }
}

function searchReport({ matches, skipped, special }: SearchTally, complete: boolean): string {
  const notes = [
    matches.length >= WORKSPACE_LIMITS.searchMatches
      ? `[stopped at ${WORKSPACE_LIMITS.searchMatches} matches; narrow the query or the folder]`
      : '',
    complete ? '' : `[searched only the first ${WORKSPACE_LIMITS.searchFiles} entries of the folder]`,
    skipped ? `[skipped ${skipped} files over ${WORKSPACE_LIMITS.readBytes} bytes]` : '',
    special ? `[skipped ${special} entries that are not regular files (pipes, sockets, devices)]` : '',
  ].filter(Boolean);
  return [...(matches.length ? matches : ['No matches.']), ...notes].join('\n');
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
