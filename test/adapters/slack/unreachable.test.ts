import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCountersign, type Countersign } from '../../../src/app.ts';
import { ScriptedProvider } from '../../../src/agent/providers/scripted.ts';
import { createLogger } from '../../../src/log.ts';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { testConfig, waitFor } from '../../helpers/harness.ts';
import { TcpProxy } from '../../helpers/tcp-proxy.ts';

/**
 * Slack that cannot be reached at start (no route, a proxy down): Countersign says once which host,
 * keeps trying with backoff without a warning per try, reports not ready, and connects once Slack
 * answers — instead of sitting inside start-up retrying for half an hour.
 */
describe('Slack unreachable at start', () => {
  let fake: FakeSlack;
  let proxy: TcpProxy;
  let db: TestDatabase;
  let app: Countersign;
  const lines: Array<{ level: number; msg: string; host?: string }> = [];

  beforeAll(async () => {
    fake = await FakeSlack.start();
    const api = new URL(fake.apiUrl);
    proxy = await TcpProxy.start({ host: api.hostname, port: Number(api.port) });
    proxy.cut();
    db = await createTestDatabase();
    const config = testConfig(db.url, {
      ...fake.env({ SLACK_API_URL: TcpProxy.rewrite(fake.apiUrl, proxy.port) }),
      LOG_LEVEL: 'debug',
    });
    const log = createLogger('debug', { write: (line: string) => void lines.push(JSON.parse(line)) });
    app = await startCountersign(config, {
      role: 'all',
      provider: new ScriptedProvider(),
      console: false,
      log,
    });
  });
  afterAll(async () => {
    await app?.stop();
    await proxy.close();
    await fake.close();
    await db.drop();
  });

  const health = async () => (await fetch(`http://127.0.0.1:${app.http.port}/healthz`)).status;

  it('starts, says once which host it cannot reach, and is not ready', async () => {
    const host = `127.0.0.1:${proxy.port}`;
    const warnings = lines.filter((l) => l.level === 40 && l.msg.includes('cannot reach Slack'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain(`cannot reach Slack at ${host}`);
    expect(await health()).toBe(503);
    // Retries are logged at debug, not as a warning each.
    await waitFor(
      async () => (lines.some((l) => l.msg === 'Slack still unreachable') ? true : undefined),
      10_000,
      'a retry',
    );
    expect(lines.filter((l) => l.level >= 40 && /cannot reach Slack|http request failed/.test(l.msg))).toHaveLength(1);
  });

  it('connects once Slack answers, and is ready then', async () => {
    proxy.restore();
    await waitFor(async () => (fake.connected ? true : undefined), 30_000, 'the Socket Mode connection');
    await waitFor(async () => ((await health()) === 200 ? true : undefined), 10_000, '/healthz to say ready');
    expect(lines.some((l) => l.msg === 'Slack reachable again; connected')).toBe(true);
  });
});
