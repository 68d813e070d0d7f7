import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMcpConfig } from '../../../../src/agent/tools/mcp/config.ts';
import { McpHub } from '../../../../src/agent/tools/mcp/hub.ts';
import { createLogger } from '../../../../src/log.ts';
import { startTelemetry, type Telemetry } from '../../../../src/telemetry/sdk.ts';
import { withSpan } from '../../../../src/telemetry/spans.ts';
import { startFakeMcpHttp, type FakeMcpHttp } from '../../../fakes/mcp/http-server.ts';
import { startFakeOtlpReceiver, type FakeOtlpReceiver } from '../../../fakes/otlp/receiver.ts';
import { testToolContext } from '../../../helpers/tools.ts';
import { unconfinedSandbox } from '../../../helpers/sandbox.ts';

/**
 * An MCP call joins the turn's trace: its span is a child of the span it runs in, and the W3C trace
 * context of that span travels in the request's `params._meta` (the MCP tracing convention), so a
 * server that traces continues the same trace.
 */
describe('an MCP call while tracing', () => {
  let receiver: FakeOtlpReceiver;
  let telemetry: Telemetry | undefined;
  let http: FakeMcpHttp;
  let hub: McpHub;

  beforeAll(async () => {
    receiver = await startFakeOtlpReceiver();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '50';
    telemetry = await startTelemetry();
    http = await startFakeMcpHttp('web-token');
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'cs-mcp-trace-')), 'mcp.json');
    writeFileSync(
      file,
      JSON.stringify({ mcpServers: { web: { url: http.url, headers: { Authorization: 'Bearer web-token' } } } }),
    );
    hub = new McpHub(loadMcpConfig(file, {}), createLogger('silent'), unconfinedSandbox());
    await hub.start();
  });
  afterAll(async () => {
    await hub?.close();
    await http?.close();
    await telemetry?.shutdown();
    await receiver?.close();
  });

  it('sends the traceparent of its span in params._meta and reports the call as a tools/call span', async () => {
    const tool = hub.tools().find((t) => t.name === 'web__get_status')!;
    const traceId = await withSpan('execute_tool web__get_status', {}, async (span) => {
      await tool.execute(tool.input.parse({ service: 'api' }), testToolContext());
      return span.spanContext().traceId;
    });
    const sent = http.toolCalls.find((c) => c.name === 'get_status');
    expect(sent?._meta?.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    await telemetry?.shutdown();
    telemetry = undefined;
    const call = receiver.spans.find((s) => s.name === 'tools/call get_status');
    expect(call).toMatchObject({
      traceId,
      attributes: { 'mcp.method.name': 'tools/call', 'countersign.mcp.server': 'web' },
    });
    const parent = receiver.spans.find((s) => s.name === 'execute_tool web__get_status');
    expect(call?.parentSpanId).toBe(parent?.spanId);
    expect(String(sent?._meta?.traceparent).split('-')[2]).toBe(call?.spanId);
  });
});
