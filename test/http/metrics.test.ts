import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { Priority } from '../../src/core/work-item.ts';

describe('GET /metrics', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      env: { BACKGROUND_CONCURRENCY: '1' },
      script: {
        rules: [
          { match: '^research', rounds: [{ text: 'z'.repeat(50), chunkSize: 1, delayMs: 200 }] },
          { match: '^tool', rounds: [{ toolCalls: [{ name: 'current_time', args: {} }] }, { text: 'done' }] },
          { rounds: [{ text: 'hi' }] },
        ],
      },
    });
  });
  afterAll(() => h.stop());

  it('exposes turn, model, tool, queue and worker figures in Prometheus text', async () => {
    await h.settled((await h.say('m-1', 'tool please')).id);
    // Two LOW jobs: one runs, one waits behind it on the single background slot.
    await h.say('m-2', 'research a', { priority: Priority.LOW, type: 'RESEARCH' });
    await h.say('m-3', 'research b', { priority: Priority.LOW, type: 'RESEARCH' });
    // Once the first has started, the second is the one waiting.
    const seen = await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${h.app.http.port}/metrics`);
        const text = await res.text();
        return /^countersign_jobs_waiting\{priority="1000"\} 1$/m.test(text) ? { res, text } : undefined;
      },
      20_000,
      'one LOW job running and one waiting',
    );
    expect(seen.res.status).toBe(200);
    expect(seen.res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = seen.text;
    expect(text).toMatch(/^countersign_turn_duration_seconds_count\{outcome="done"\} [1-9]/m);
    expect(text).toMatch(/^countersign_first_visible_text_seconds_count\{platform="test"\} [1-9]/m);
    expect(text).toMatch(/^countersign_model_rounds_total\{provider="scripted"\} [2-9]/m);
    expect(text).toMatch(/^countersign_tool_calls_total\{tool="current_time",outcome="ok"\} 1$/m);
    expect(text).toMatch(/^countersign_jobs_waiting\{priority="1000"\} 1$/m);
    expect(text).toMatch(/^countersign_workers_alive 1$/m);
    expect(text).toContain('countersign_approvals_total');
    expect(text).toContain('countersign_platform_rate_limited_total');
    expect(text).toContain('countersign_worker_heartbeat_timestamp_seconds');
  });

  it('names the default Node.js metrics as every dashboard expects: process_* and nodejs_*, unprefixed', async () => {
    const text = await (await fetch(`http://127.0.0.1:${h.app.http.port}/metrics`)).text();
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);
    expect(text).toMatch(/^process_resident_memory_bytes \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
    // Only Countersign's own metrics carry its prefix, and never twice over.
    expect(text).not.toMatch(/^countersign_(process|nodejs)_/m);
    const names = [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!);
    expect(names.filter((n) => !/^(countersign_|process_|nodejs_)/.test(n))).toEqual([]);
  });
});
