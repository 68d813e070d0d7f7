import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { runCli } from '../helpers/processes.ts';
import { makeRepo } from '../repos/git-fixture.ts';
import { registeredToolKinds } from '../../src/wiring/tools.ts';

describe('countersign policy check --tool', () => {
  let h: Harness;
  beforeAll(async () => {
    // Every optional feature on, so the app registers every tool it has.
    const repo = makeRepo();
    h = await startHarness({ env: { REPOS: `demo=${repo.clone}`, ENABLE_RUN_COMMAND: 'true' } });
  });
  afterAll(() => h.stop());

  it('knows the kind of every tool the app registers (MCP tools aside)', () => {
    const registered = h.app.tools.list().filter((tool) => !tool.name.includes('__'));
    expect(registered.map((t) => t.name)).toEqual(expect.arrayContaining(['merge_change', 'schedule_task']));
    const known = registeredToolKinds();
    const kinds = Object.fromEntries(registered.map((tool) => [tool.name, known.get(tool.name)]));
    expect(kinds).toEqual(Object.fromEntries(registered.map((tool) => [tool.name, tool.kind])));
  });

  it.each([
    ['merge_change', 'default:merge'],
    ['schedule_task', 'default:schedule'],
  ])('decides a call to %s without being told its kind', async (tool, rule) => {
    const run = runCli(['policy', 'check', '--as', 'console:root', '--tool', tool], { LOG_LEVEL: 'silent' });
    const { code } = await run.exited;
    expect({ code, err: run.stderr() }).toEqual({ code: 0, err: '' });
    expect(run.stdout()).toContain(`rule: ${rule} (built-in)`);
  });
});
