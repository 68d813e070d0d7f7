import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, type AdmissionDeps } from '../../src/approval/admission.ts';
import { Priority, type WorkItem } from '../../src/core/work-item.ts';
import type { Script } from '../../src/agent/providers/scripted.ts';
import { startTelemetry, type Telemetry } from '../../src/telemetry/sdk.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { runCli, type CliProcess } from '../helpers/processes.ts';
import { startFakeOtlpReceiver, type FakeOtlpReceiver, type ReceivedSpan } from '../fakes/otlp/receiver.ts';

/**
 * One turn, one trace: a message admitted on an ingress (this process), run by a worker process up
 * to its approval card, the card clicked on the ingress after that worker stopped, and the
 * continuation run by a second worker process. Every process sends its spans to the fake OTLP
 * receiver, and the trace is read from what it received.
 */

const SECRET_PROMPT = 'write notes.txt: the launch code is tulip';
const script: Script = {
  rules: [
    {
      match: '^write (?<file>\\S+): (?<text>.*)',
      rounds: [
        { text: 'Checking the time first.', toolCalls: [{ name: 'current_time', args: {} }] },
        { text: 'Writing it.', toolCalls: [{ name: 'write_file', args: { path: '{{file}}', content: '{{text}}' } }] },
        { text: 'Done: {{lastToolResult}}' },
      ],
    },
  ],
};

const operator = { platform: 'console', userId: 'root', workspace: 'local' };
const place = { platform: 'console', channel: 'traces' };

/**
 * Every span of one trace once it holds `counts` spans of each name, waiting until each process has
 * sent its part (a run's span ends, and is sent, after the spans inside it).
 */
async function traceWith(receiver: FakeOtlpReceiver, traceId: string, counts: Record<string, number>) {
  return waitFor(
    async () => {
      const spans = receiver.spans.filter((s) => s.traceId === traceId);
      const complete = Object.entries(counts).every(([n, count]) => byName(spans, n).length >= count);
      return complete ? spans : undefined;
    },
    60_000,
    `a trace with ${JSON.stringify(counts)}`,
  );
}

/** The spans of the approved turn: two runs (the turn and its continuation), three model calls. */
const APPROVED_TURN = {
  'ingress console': 1,
  enqueue: 1,
  'run CHAT': 2,
  'chat script': 3,
  'approval wait': 1,
  'execute_tool current_time': 1,
  'execute_tool write_file': 1,
};

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const one = (spans: ReceivedSpan[], name: string) => {
  const found = byName(spans, name);
  expect(found, name).toHaveLength(1);
  return found[0]!;
};

describe('one OpenTelemetry trace per turn', () => {
  let receiver: FakeOtlpReceiver;
  let telemetry: Telemetry | undefined;
  let h: Harness;
  let deps: AdmissionDeps;
  let workerEnv: Record<string, string>;
  const workers: CliProcess[] = [];

  beforeAll(async () => {
    receiver = await startFakeOtlpReceiver();
    // This process is the ingress: its spans (the inbound event, the approval wait) go to the receiver too.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_SERVICE_NAME = 'countersign-ingress';
    process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
    telemetry = await startTelemetry();
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-traces-'));
    const scriptFile = path.join(dir, 'script.json');
    writeFileSync(scriptFile, JSON.stringify(script));
    // Every process of one deployment shares the workspace (it is part of an approval's scope).
    const shared = { AGENT_WORKSPACE_ROOT: path.join(dir, 'workspace') };
    h = await startHarness({ role: 'ingress', env: shared });
    deps = { pool: h.app.pool, approvals: h.app.approvals, log: h.app.log, platform: 'console' };
    workerEnv = {
      ...shared,
      DATABASE_URL: h.db.url,
      AI_PROVIDER: 'scripted',
      SCRIPTED_MODEL_SCRIPT: scriptFile,
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      WORKER_POLL_INTERVAL_MS: '200',
      SHUTDOWN_GRACE_SECONDS: '1',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'countersign-worker',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await h.stop();
    await telemetry?.shutdown();
    await receiver.close();
  });

  const worker = (env: Record<string, string> = {}) => {
    const started = runCli(['start', '--role=worker'], { ...workerEnv, ...env });
    workers.push(started);
    return started;
  };

  async function mention(conversation: string, eventId: string): Promise<WorkItem> {
    const result = await admit(deps, {
      requester: operator,
      place: { ...place, channel: conversation },
      eventId,
      draft: {
        type: 'CHAT',
        priority: Priority.CRITICAL,
        conversationId: `console:${conversation}`,
        input: { prompt: SECRET_PROMPT },
        payload: {},
        reply: { ...place, channel: conversation },
      },
    });
    if (!result.ok || !result.item) throw new Error('the mention was not admitted');
    return result.item;
  }

  const cardOf = (itemId: string) =>
    waitFor(
      async () =>
        (
          await h.app.pool.query<{ nonce: string }>(
            `SELECT nonce FROM countersign.approval_envelopes WHERE work_item_id = $1 AND card_message_id IS NOT NULL`,
            [itemId],
          )
        ).rows[0],
      30_000,
      'the card',
    );

  it('follows mention → tool → card → click → continuation on another worker as one trace', async () => {
    const first = worker();
    const item = await mention('traced', 'Ev0TRACED');
    const traceparent = String(item.payload.traceparent);
    const traceId = traceparent.split('-')[1];
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    const { nonce } = await cardOf(item.id);
    // The worker that parked the turn stops (sending its last spans); the click comes to the ingress.
    first.child.kill('SIGTERM');
    await first.exited;
    const click = await h.app.approvals.click(`${nonce}.A`, operator);
    if (!click.ok || !('continuation' in click)) throw new Error('expected the click to be consumed');
    const second = worker();
    expect((await h.settled(click.continuation.id, 60_000)).status).toBe('done');

    const spans = await traceWith(receiver, traceId!, APPROVED_TURN);
    const ingress = one(spans, 'ingress console');
    expect(ingress.parentSpanId).toBeUndefined();
    expect(ingress.attributes['countersign.event.id']).toBe('Ev0TRACED');
    expect(one(spans, 'enqueue').parentSpanId).toBe(ingress.spanId);

    // The approval wait: from the card to the click, in the parked run's trace, with who decided;
    // the continuation's run is its child. (A run retried under load adds a run span, no more.)
    const wait = one(spans, 'approval wait');
    const runs = byName(spans, 'run CHAT');
    const parked = runs.find((r) => r.spanId === wait.parentSpanId)!;
    const continued = runs.find((r) => r.parentSpanId === wait.spanId)!;
    expect(parked).toBeDefined();
    expect(continued).toBeDefined();
    expect(parked.parentSpanId).toBe(one(spans, 'enqueue').spanId);
    expect(wait.resource['service.name']).toBe('countersign-ingress');
    expect(wait.attributes).toMatchObject({
      'countersign.approval.decider': 'console:root',
      'countersign.approval.outcome': 'approved',
    });
    expect(wait.attributes['countersign.approval.wait_ms']).toBeGreaterThanOrEqual(0);
    // Two worker processes: the turn up to its card, and the continuation.
    expect(parked.attributes['countersign.worker.id']).not.toBe(continued.attributes['countersign.worker.id']);
    expect(parked.resource['service.instance.id']).not.toBe(continued.resource['service.instance.id']);
    expect(parked.resource['process.pid']).toBe(first.child.pid);
    expect(continued.resource['process.pid']).toBe(second.child.pid);

    // Model calls follow the GenAI conventions.
    const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
    expect(chats.length).toBeGreaterThanOrEqual(3);
    for (const chat of chats) {
      expect(chat.attributes).toMatchObject({
        'gen_ai.provider.name': 'scripted',
        // The name before semantic conventions 1.37, kept beside the new one unless opted out.
        'gen_ai.system': 'scripted',
        'gen_ai.request.model': 'script',
        'gen_ai.conversation.id': 'console:traced',
      });
      expect(chat.attributes['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
      expect(chat.attributes['gen_ai.usage.output_tokens']).toEqual(expect.any(Number));
      expect(chat.attributes['gen_ai.usage.cache_read.input_tokens']).toEqual(expect.any(Number));
      expect(chat.attributes['gen_ai.usage.cache_creation.input_tokens']).toEqual(expect.any(Number));
    }
    expect(chats.map((c) => c.attributes['gen_ai.response.finish_reasons'])).toEqual(
      expect.arrayContaining([['tool_use'], ['end_turn']]),
    );

    // Tools: what ran, and why it was allowed to.
    expect(one(spans, 'execute_tool current_time').attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'current_time',
      'countersign.policy.outcome': 'allow',
    });
    const write = one(spans, 'execute_tool write_file');
    expect(write.attributes['countersign.policy.outcome']).toBe('approved');
    expect(write.parentSpanId).toBe(continued.spanId);
    // Deliveries of the reply are spans too.
    expect(spans.some((s) => s.name === 'deliver post' || s.name === 'deliver edit')).toBe(true);

    // No content by default: neither the prompt, nor the answer, nor tool arguments or results.
    const everything = JSON.stringify(spans.map((s) => s.attributes));
    expect(everything).not.toContain('tulip');
    for (const s of spans) {
      expect(Object.keys(s.attributes)).not.toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^gen_ai\.(input|output)\.messages$|^gen_ai\.tool\.call\.(arguments|result)$/),
        ]),
      );
    }

    // The continuation's log lines lead to the trace.
    await second.child.kill('SIGTERM');
    await second.exited;
    expect(second.stderr()).toContain(`"trace_id":"${traceId}"`);
  });

  it('adds prompts, answers and tool arguments with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true', async () => {
    const running = worker({
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      OTEL_SEMCONV_STABILITY_OPT_IN: 'http,gen_ai_latest_experimental',
    });
    const item = await mention('content', 'Ev0CONTENT');
    const traceId = String(item.payload.traceparent).split('-')[1];
    const { nonce } = await cardOf(item.id);
    const click = await h.app.approvals.click(`${nonce}.A`, operator);
    if (!click.ok || !('continuation' in click)) throw new Error('expected the click to be consumed');
    expect((await h.settled(click.continuation.id, 60_000)).status).toBe('done');
    const spans = await traceWith(receiver, traceId!, APPROVED_TURN);
    const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
    // The newest GenAI names only: no gen_ai.system beside gen_ai.provider.name.
    for (const chat of chats) expect(Object.keys(chat.attributes)).not.toContain('gen_ai.system');
    expect(chats[0]?.attributes['gen_ai.provider.name']).toBe('scripted');
    const inputs = chats.map((c) => String(c.attributes['gen_ai.input.messages']));
    expect(inputs.every((i) => i.includes('the launch code is tulip'))).toBe(true);
    expect(chats.some((c) => String(c.attributes['gen_ai.output.messages']).includes('Writing it.'))).toBe(true);
    const write = one(spans, 'execute_tool write_file');
    expect(JSON.parse(String(write.attributes['gen_ai.tool.call.arguments']))).toMatchObject({ path: 'notes.txt' });
    expect(write.attributes['gen_ai.tool.call.result']).toEqual(expect.any(String));
    running.child.kill('SIGTERM');
    await running.exited;
    expect(readFileSync(path.join(workerEnv.AGENT_WORKSPACE_ROOT!, 'notes.txt'), 'utf8')).toBe(
      'the launch code is tulip',
    );
  });

  it('ends the approval wait as expired, in the parked turn’s trace, when nobody decides in time', async () => {
    const running = worker();
    const item = await mention('expiring', 'Ev0EXPIRING');
    const traceId = String(item.payload.traceparent).split('-')[1]!;
    await cardOf(item.id);
    await h.app.pool.query(`UPDATE countersign.approval_envelopes SET expires_at = now() WHERE work_item_id = $1`, [
      item.id,
    ]);
    expect(await h.app.approvals.expireStale()).toBe(1);
    const spans = await traceWith(receiver, traceId, { 'run CHAT': 1, 'approval wait': 1 });
    const wait = one(spans, 'approval wait');
    expect(wait.parentSpanId).toBe(one(spans, 'run CHAT').spanId);
    expect(wait.attributes['countersign.approval.outcome']).toBe('expired');
    expect(wait.attributes).not.toHaveProperty('countersign.approval.decider');
    running.child.kill('SIGTERM');
    await running.exited;
  });
});
