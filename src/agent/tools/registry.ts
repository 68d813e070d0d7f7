import type { ToolSpec } from '../model.ts';
import { toolSpec, type AnyTool } from './tool.ts';

/** The set of tools one agent can call, by name. */
export class ToolRegistry {
  readonly #tools = new Map<string, AnyTool>();
  /** specs() of the current tools: building JSON Schemas from zod on every model round is costly. */
  #specs: ToolSpec[] | undefined;

  constructor(tools: Iterable<AnyTool> = []) {
    for (const tool of tools) this.add(tool);
  }

  add(tool: AnyTool): this {
    if (this.#tools.has(tool.name)) throw new Error(`Two tools are named "${tool.name}"; tool names must be unique`);
    this.#tools.set(tool.name, tool);
    this.#specs = undefined;
    return this;
  }

  /** Adds the tool or replaces the one of the same name (a remote tool list that changed). */
  upsert(tool: AnyTool): this {
    this.#tools.set(tool.name, tool);
    this.#specs = undefined;
    return this;
  }

  get(name: string): AnyTool | undefined {
    return this.#tools.get(name);
  }

  list(): AnyTool[] {
    return [...this.#tools.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The tools as the model sees them. Shared between calls: callers must not modify them. */
  specs(): ToolSpec[] {
    this.#specs ??= this.list().map(toolSpec);
    return [...this.#specs];
  }

  /** Name and version of every tool, for an approval's scope hash. */
  fingerprint(): Array<{ name: string; version: string }> {
    return this.list().map((t) => ({ name: t.name, version: t.version }));
  }
}
