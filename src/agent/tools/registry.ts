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

  /**
   * Makes the MCP tools exactly `tools`: new and changed ones in, and out every MCP tool no longer
   * listed (its server dropped it), so the model is not offered it and approvals for it lapse.
   */
  replaceMcpTools(tools: AnyTool[]): this {
    const keep = new Set(tools.map((t) => t.name));
    for (const [name, tool] of this.#tools) if (tool.mcp && !keep.has(name)) this.#tools.delete(name);
    for (const tool of tools) this.#tools.set(tool.name, tool);
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
  /**
   * Sorted by name: the tool list opens every prompt, and a cached prefix only matches byte for byte,
   * so two workers that registered the same tools in another order (MCP servers connect when they
   * connect) must still send the same list.
   */
  specs(): ToolSpec[] {
    this.#specs ??= this.list()
      .filter((tool) => !tool.hidden)
      .map(toolSpec)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return [...this.#specs];
  }

  /** A registry of the tools `keep` accepts (a review's turn gets no tool that writes). */
  only(keep: (tool: AnyTool) => boolean): ToolRegistry {
    return new ToolRegistry(this.list().filter(keep));
  }

  /** Name and version of every tool (or of those named), for an approval's scope hash. */
  fingerprint(names?: readonly string[]): Array<{ name: string; version: string }> {
    const wanted = names && new Set(names);
    return this.list()
      .filter((t) => !wanted || wanted.has(t.name))
      .map((t) => ({ name: t.name, version: t.version }));
  }
}
