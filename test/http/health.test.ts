import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';

describe('GET /healthz', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({});
  });
  afterAll(() => h.stop());

  it('answers 200 with the status alone while the database answers and the worker runs', async () => {
    const res = await fetch(`http://127.0.0.1:${h.app.http.port}/healthz`);
    expect(res.status).toBe(200);
    // Nothing about the database, the worker or the process's role: anyone reaching the port sees this.
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('answers 503 with the status alone when the database does not', async () => {
    // Closing the pool under the health check makes every query fail like an unreachable database.
    await h.app.pool.end();
    const res = await fetch(`http://127.0.0.1:${h.app.http.port}/healthz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'unavailable' });
  });
});
