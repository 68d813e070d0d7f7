import type { Requester } from '../core/person.ts';
import type { ToolCall, ToolResult } from './messages.ts';
import type { ToolRegistry } from './tools/registry.ts';
import { admitArgs, needsApproval, type AnyTool } from './tools/tool.ts';

/** The policy's outcome for one call, and the rule that decided it (`name, source`). */
export interface CallRuling {
  outcome: 'allow' | 'ask' | 'countersign' | 'deny';
  rule: string;
  /** Why a call is denied, from the rule. */
  message?: string;
}

/** A standing grant a call ran under: shown in the progress line while it runs. */
export interface GrantUse {
  grantId: string;
  /** Who made the grant: their standing approval lets the call run (a change's author, src/repos). */
  grantedBy?: Requester;
  /** e.g. "allowed by a grant from Alice, expires 2026-12-01 14:00 UTC" */
  note: string;
}

export interface RulingDeps {
  tools: ToolRegistry;
  /**
   * What the policy says of a call with valid arguments. Absent: each tool's own `approval` decides
   * (`ask` or `allow`).
   */
  rule?: (call: ToolCall) => CallRuling | Promise<CallRuling>;
  /** Told about each call a rule decided without a person (allowed or denied), before it runs (audit). */
  onRuled?: (call: ToolCall, ruling: CallRuling) => Promise<void>;
  /**
   * For a call that would wait for a person: a standing grant that covers it, claimed (and audited)
   * atomically, or undefined. A covered call runs at once, saying whose grant allowed it.
   */
  useGrant?: (call: ToolCall) => Promise<GrantUse | undefined>;
}

/**
 * What happens to one call of a round: it runs now (allowed, covered by a grant — `note` says whose —
 * or refused by its tool, which answers it with an error), it waits for a person, or the policy
 * denied it and the model hears why.
 */
export type CallVerdict = { kind: 'run'; note?: string } | { kind: 'wait' } | { kind: 'denied'; result: ToolResult };

function ownRuling(tool: AnyTool, args: unknown): CallRuling {
  return needsApproval(tool, args) ? { outcome: 'ask', rule: 'tool' } : { outcome: 'allow', rule: 'tool' };
}

function hiddenToolRefusal(call: ToolCall): ToolResult {
  return {
    toolCallId: call.id,
    name: call.name,
    content: `There is no tool named "${call.name}" you can call.`,
    isError: true,
  };
}

/** The tool result of a call the policy refused: the model hears which rule, and why. */
function policyDenial(call: ToolCall, ruling: CallRuling): ToolResult {
  const why = ruling.message ? ` ${ruling.message}` : '';
  return {
    toolCallId: call.id,
    name: call.name,
    content: `The policy does not allow this call (rule ${ruling.rule}), so it was not run.${why} Do not try it again; tell the person what you would have done instead.`,
    isError: true,
  };
}

/**
 * Rules on one call: the policy (or the tool's own `approval`) decides; a call that would wait for a
 * person runs at once when a standing grant covers it. Calls a rule decided are audited here
 * (`onRuled`), before they run.
 */
export async function ruleCall(call: ToolCall, deps: RulingDeps): Promise<CallVerdict> {
  const tool = deps.tools.get(call.name);
  // A hidden tool's calls are the bot's own (a change card's merge): one the model makes is refused
  // as if the tool did not exist, so its arguments can never be the model's.
  if (tool?.hidden) return { kind: 'denied', result: hiddenToolRefusal(call) };
  // Unknown tools and bad arguments are answered by executeToolCall with an error, never run.
  if (!tool || call.argsError || !admitArgs(tool, call.args).ok) return { kind: 'run' };
  const ruling = await (deps.rule?.(call) ?? ownRuling(tool, call.args));
  if (ruling.outcome === 'ask' || ruling.outcome === 'countersign') {
    const grant = await deps.useGrant?.(call);
    return grant ? { kind: 'run', note: grant.note } : { kind: 'wait' };
  }
  await deps.onRuled?.(call, ruling);
  return ruling.outcome === 'deny' ? { kind: 'denied', result: policyDenial(call, ruling) } : { kind: 'run' };
}
