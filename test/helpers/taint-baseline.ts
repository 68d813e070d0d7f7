import type { Queryable } from '../../src/db/pool.ts';
import { replaceBaseline } from '../../src/approval/taint-store.ts';
import { DEPLOYMENT_WORKSPACE } from '../../src/approval/taint.ts';
import { scanWorkspace } from '../../src/approval/workspace-scan.ts';

/**
 * Makes a workspace's files as they are now its baseline, as a countersigned run would (taint.ts):
 * tests that share one workspace start each case from content a second person vouched for.
 */
export async function vouchForWorkspace(db: Queryable, root: string, key = DEPLOYMENT_WORKSPACE): Promise<void> {
  const { entries } = await scanWorkspace(root);
  await replaceBaseline(db, key, Object.fromEntries([...entries].map(([p, { entry }]) => [p, entry])), 'test');
}
