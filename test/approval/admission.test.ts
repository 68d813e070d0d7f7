import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, type AdmissionDeps, type AdmissionDraft } from '../../src/approval/admission.ts';
import { Priority } from '../../src/core/work-item.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

/**
 * The one way in for every platform: the policy's `mayUse`, the conversation mode, the durable
 * enqueue once per event. An ingress process, so nothing runs the items: what is stored is what the
 * test reads.
 */
describe('admission', () => {
  let h: Harness;
  let deps: AdmissionDeps;
  const place = { platform: 'slack', channel: 'C0OPS0001', workspace: 'T0HOME001', thread: '1700000000.000100' };
  const member = { platform: 'slack', userId: 'U0ALICE01', workspace: 'T0HOME001' };
  const outsider = { platform: 'slack', userId: 'U0MALLORY', workspace: 'T0OTHER01' };
  const draft = (conversation: string): AdmissionDraft => ({
    type: 'CHAT',
    priority: Priority.CRITICAL,
    conversationId: `slack:T0HOME001:C0OPS0001:${conversation}`,
    input: { prompt: 'hello' },
    payload: {},
    reply: place,
  });
  const stored = async (conversation: string) =>
    (
      await h.app.pool.query(`SELECT item FROM countersign.work_items WHERE conversation_id = $1`, [
        `slack:T0HOME001:C0OPS0001:${conversation}`,
      ])
    ).rows.map((r) => r.item as { mode?: string });

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-admission-'));
    const policy = path.join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      'version: 1\nworkspaces: [slack:T0HOME001]\nrequesters:\n  allow:\n    - workspaces: [slack:T0HOME001]\n',
    );
    h = await startHarness({ role: 'ingress', env: { POLICY_FILE: policy } });
    deps = { pool: h.app.pool, approvals: h.app.approvals, log: h.app.log, platform: 'slack' };
  });
  afterAll(() => h.stop());

  it("stamps a message with the conversation mode the platform's rules and the policy give", async () => {
    const result = await admit(deps, { requester: member, place, draft: draft('steer') });
    expect(result).toMatchObject({ ok: true, item: { mode: 'steer' } });
    expect(await stored('steer')).toEqual([expect.objectContaining({ mode: 'steer' })]);
  });

  it('leaves a skill run or a console line queued: it never steers nor withdraws a card', async () => {
    const result = await admit(deps, { requester: member, place, draft: draft('queued'), queued: true });
    expect(result.ok && result.item?.mode).toBeUndefined();
    expect((await stored('queued'))[0]?.mode).toBeUndefined();
  });

  it('takes a redelivered event once', async () => {
    const request = { requester: member, place, draft: draft('redelivered'), eventId: 'Ev0REDELIVER' };
    const first = await admit(deps, request);
    const again = await admit(deps, request);
    expect(first.ok && first.item).toBeTruthy();
    expect(again).toEqual({ ok: true, item: undefined });
    expect(await stored('redelivered')).toHaveLength(1);
  });

  it('refuses someone the policy does not serve before building the draft: no header, no item', async () => {
    let built = false;
    const result = await admit(deps, {
      requester: outsider,
      place,
      draft: async () => {
        built = true;
        return draft('refused');
      },
    });
    expect(result).toEqual({ ok: false, refusal: expect.any(String) });
    expect(built).toBe(false);
    expect(await stored('refused')).toEqual([]);
  });

  it("refuses an adapter asking for another platform's person or place, and enqueues nothing", async () => {
    const operator = { platform: 'console', userId: 'root', workspace: 'local' };
    await expect(admit(deps, { requester: operator, place, draft: draft('borrowed') })).rejects.toThrow(
      /slack adapter asked to admit console:root/,
    );
    await expect(
      admit({ ...deps, platform: 'console' }, { requester: operator, place, draft: draft('borrowed') }),
    ).rejects.toThrow(/console adapter asked/);
    expect(await stored('borrowed')).toEqual([]);
  });
});
