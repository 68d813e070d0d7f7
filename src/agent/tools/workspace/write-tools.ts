import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { defineBuiltinTool, type ToolContext, type ToolOutput } from '../tool.ts';
import { PathArg, type WorkspaceAccess, type WorkspaceOf } from './access.ts';
import { WORKSPACE_LIMITS } from './confine.ts';
import { unifiedDiff } from './diff.ts';
import { describeFailure, readText, requireRegularFile, writeAtomically } from './files.ts';
import { INVALID_FOR_CARD, previewWithin } from './preview.ts';

const WriteArgs = z.object({
  path: PathArg,
  content: z.string().describe(`The whole new content (at most ${WORKSPACE_LIMITS.writeBytes} bytes)`),
});
type WriteArgs = z.infer<typeof WriteArgs>;
const EditArgs = z.object({
  path: PathArg,
  old_text: z.string().min(1).describe('Text to replace, copied exactly from the file'),
  new_text: z.string(),
  replace_all: z.boolean().default(false).describe('Replace every occurrence instead of exactly one'),
});
type EditArgs = z.infer<typeof EditArgs>;

function tooLarge(content: string): ToolOutput | undefined {
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes <= WORKSPACE_LIMITS.writeBytes) return undefined;
  return {
    content: `The content is ${bytes} bytes; files over ${WORKSPACE_LIMITS.writeBytes} bytes are not written.`,
    isError: true,
  };
}

/** Replaces exactly one occurrence (or all, when asked), or explains why it can't. */
function applyEdit(text: string, { old_text, new_text, replace_all }: Omit<EditArgs, 'path'>): string | ToolOutput {
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

export function writeFileTool(ws: WorkspaceOf) {
  return defineBuiltinTool({
    name: 'write_file',
    kind: 'write',
    description:
      'Creates a text file in the workspace, or replaces its whole content (folders are created as needed). A person approves the change first.',
    version: '2',
    input: WriteArgs,
    approval: 'always',
    risk: 'medium',
    idempotent: false,
    describeForApproval: (raw, ctx) => describeWrite(ws(ctx), raw, ctx),
    execute: (args, ctx) => writeFile(ws(ctx), args),
  });
}

/** The card's preview of a write: a unified diff against the file as it is (or /dev/null). */
async function describeWrite(ws: WorkspaceAccess, raw: unknown, ctx: ToolContext): Promise<string> {
  // Approval cards pass the arguments as the model sent them; parse for defaults.
  const parsed = WriteArgs.safeParse(raw);
  if (!parsed.success) return INVALID_FOR_CARD;
  const { path: p, content } = parsed.data;
  return previewWithin(ctx.signal, async () => {
    try {
      const file = await ws.resolve(p);
      const shown = await ws.show(file);
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
}

async function writeFile(ws: WorkspaceAccess, { path: p, content }: WriteArgs): Promise<ToolOutput | string> {
  const large = tooLarge(content);
  if (large) return large;
  try {
    const file = await ws.resolve(p);
    await writeAtomically(file, content);
    return `Wrote ${Buffer.byteLength(content, 'utf8')} bytes to ${await ws.show(file)}.`;
  } catch (error) {
    return describeFailure(error);
  }
}

export function editFileTool(ws: WorkspaceOf) {
  return defineBuiltinTool({
    name: 'edit_file',
    kind: 'write',
    description:
      'Replaces exact text in a workspace text file: old_text must occur exactly once unless replace_all is true. A person approves the change first.',
    version: '2',
    input: EditArgs,
    approval: 'always',
    risk: 'medium',
    idempotent: false,
    describeForApproval: (raw, ctx) => describeEdit(ws(ctx), raw, ctx),
    execute: (args, ctx) => editFile(ws(ctx), args),
  });
}

/** The card's preview of an edit: the unified diff it would make. */
async function describeEdit(ws: WorkspaceAccess, raw: unknown, ctx: ToolContext): Promise<string> {
  const parsed = EditArgs.safeParse(raw);
  if (!parsed.success) return INVALID_FOR_CARD;
  const args = parsed.data;
  return previewWithin(ctx.signal, async () => {
    try {
      const file = await ws.resolve(args.path);
      const before = await readText(file);
      if (typeof before !== 'string') return before.content;
      const after = applyEdit(before, args);
      if (typeof after !== 'string') return after.content;
      const shown = await ws.show(file);
      return unifiedDiff(before, after, `a/${shown}`, `b/${shown}`) || 'No change: new_text equals old_text.';
    } catch (error) {
      return describeFailure(error).content;
    }
  });
}

async function editFile(ws: WorkspaceAccess, args: EditArgs): Promise<ToolOutput | string> {
  try {
    const file = await ws.resolve(args.path);
    const before = await readText(file);
    if (typeof before !== 'string') return before;
    const after = applyEdit(before, args);
    if (typeof after !== 'string') return after;
    const large = tooLarge(after);
    if (large) return large;
    await writeAtomically(file, after);
    const count = args.replace_all ? before.split(args.old_text).length - 1 : 1;
    return `Edited ${await ws.show(file)} (${count} replacement${count === 1 ? '' : 's'}).`;
  } catch (error) {
    return describeFailure(error);
  }
}
