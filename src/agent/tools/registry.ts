import type { ToolSpec } from '../model.ts';
import { toolSpec, type AnyTool } from './tool.ts';

/** The set of tools one agent can call, by name. */
export class ToolRegistry {
  readonly #tools = new Map<string, AnyTool>();

  constructor(tools: Iterable<AnyTool> = []) {
    for (const tool of tools) this.add(tool);
  }

  add(tool: AnyTool): this {
    if (this.#tools.has(tool.name)) throw new Error(`Two tools are named "${tool.name}"; tool names must be unique`);
    this.#tools.set(tool.name, tool);
    return this;
  }

  /** Adds the tool or replaces the one of the same name (a remote tool list that changed). */
  upsert(tool: AnyTool): this {
    this.#tools.set(tool.name, tool);
    return this;
  }

  get(name: string): AnyTool | undefined {
    return this.#tools.get(name);
  }

  list(): AnyTool[] {
    return [...this.#tools.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  specs(): ToolSpec[] {
    return this.list().map(toolSpec);
  }

  /** Name and version of every tool, for an approval's scope hash. */
  fingerprint(): Array<{ name: string; version: string }> {
    return this.list().map((t) => ({ name: t.name, version: t.version }));
  }
}
