import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMcpConfig } from '../../../../src/agent/tools/mcp/config.ts';
import { McpHub } from '../../../../src/agent/tools/mcp/hub.ts';
import { admitArgs, type AnyTool } from '../../../../src/agent/tools/tool.ts';
import { createLogger } from '../../../../src/log.ts';
import { parsePolicy, type Policy } from '../../../../src/policy/index.ts';
import { people, places, platforms } from '../../../policy/helpers.ts';
import { unconfinedSandbox } from '../../../helpers/sandbox.ts';
import { testToolContext } from '../../../helpers/tools.ts';

/**
 * A call that leaves out an argument its MCP tool's schema gives a default for: the server uses the
 * default, so the policy must decide on it too. Without this a deny rule on `replicas: 0` missed
 * `{"deployment": "api"}`, which the server ran as `replicas: 0`.
 */

const SERVER = path.resolve(import.meta.dirname, '../../../fakes/mcp/defaults-server.ts');

const POLICY = `version: 1
approvers: [slack:U0SRE0001]
rules:
  - name: never-zero
    tool: k8s__scale
    args: { replicas: 0 }
    outcome: deny
  - name: prod-needs-two
    tool: k8s__scale
    args: { namespace: prod }
    outcome: countersign
  - { name: scale, tool: k8s__scale, outcome: allow }
`;

let hub: McpHub;
let scale: AnyTool;
let policy: Policy;

beforeAll(async () => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-mcp-defaults-')), 'mcp.json');
  writeFileSync(
    file,
    JSON.stringify({
      mcpServers: {
        k8s: {
          command: process.execPath,
          args: [SERVER],
          sandbox: { read: [path.dirname(SERVER), path.resolve(import.meta.dirname, '../../../../node_modules')] },
        },
      },
    }),
  );
  hub = new McpHub(loadMcpConfig(file, {}), createLogger('silent'), unconfinedSandbox());
  await hub.start();
  scale = hub.tools().find((t) => t.name === 'k8s__scale')!;
  const parsed = parsePolicy(POLICY, 'policy.yaml', { platforms });
  if (!parsed.ok) throw new Error(parsed.problems.map((p) => p.message).join('\n'));
  policy = parsed.policy;
});
afterAll(async () => {
  await hub.close();
});

/** The decision on a call as the model sent it, and what the server then did with the admitted arguments. */
async function decideAndRun(sent: Record<string, unknown>) {
  const admitted = admitArgs(scale, sent);
  if (!admitted.ok) throw new Error(admitted.problem);
  const decision = policy.decide({
    tool: { name: scale.name, kind: 'mcp', mcp: { server: 'k8s', trusted: false } },
    args: admitted.args,
    where: places.ops,
    requester: people.dev,
  });
  const out = await scale.execute(admitted.args, testToolContext());
  return { decision, ran: typeof out === 'string' ? out : out.content };
}

describe("an MCP tool's schema defaults", () => {
  it('a deny rule on a value the server fills in by default denies the call that leaves it out', async () => {
    const { decision, ran } = await decideAndRun({ deployment: 'api' });
    expect(ran).toBe('scaled api in prod to 0');
    expect(decision).toMatchObject({ outcome: 'deny', rule: { name: 'never-zero' } });
  });

  it('a countersign rule on a defaulted value is not skipped when the call leaves it out', async () => {
    const { decision, ran } = await decideAndRun({ deployment: 'api', replicas: 2 });
    expect(ran).toBe('scaled api in prod to 2');
    expect(decision).toMatchObject({ outcome: 'countersign', rule: { name: 'prod-needs-two' } });
  });

  it('an argument the call gives is left as given', async () => {
    const { decision, ran } = await decideAndRun({ deployment: 'api', replicas: 3, namespace: 'dev' });
    expect(ran).toBe('scaled api in dev to 3');
    expect(decision).toMatchObject({ outcome: 'allow', rule: { name: 'scale' } });
  });
});
