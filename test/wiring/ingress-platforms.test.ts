import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../fakes/discord/index.ts';
import { FakeSlack } from '../fakes/slack/fake-slack.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { runCli, type CliProcess } from '../helpers/processes.ts';

describe('INGRESS_PLATFORMS', () => {
  let discord: FakeDiscord;
  let slack: FakeSlack;
  let db: TestDatabase;
  const processes: CliProcess[] = [];
  beforeAll(async () => {
    discord = await FakeDiscord.start();
    slack = await FakeSlack.start();
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const p of processes) p.child.kill('SIGKILL');
    await discord.close();
    await slack.close();
    await db.drop();
  });

  const waitFor = async (what: string, ok: () => boolean) => {
    for (let i = 0; i < 300 && !ok(); i++) await new Promise((r) => setTimeout(r, 100));
    expect(ok(), what).toBe(true);
  };

  it('keeps an ingress replica off the Discord gateway while it listens to Slack', async () => {
    const ingress = runCli(['start', '--role=ingress'], {
      DATABASE_URL: db.url,
      AI_PROVIDER: 'scripted',
      HTTP_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      INGRESS_PLATFORMS: 'slack',
      SLACK_BOT_TOKEN: slack.botToken,
      SLACK_APP_TOKEN: slack.appToken,
      SLACK_API_URL: slack.apiUrl,
      DISCORD_TOKEN: discord.token,
      DISCORD_APPLICATION_ID: discord.scene.applicationId,
      DISCORD_GUILD_ID: discord.scene.guildId,
      DISCORD_API_URL: discord.restUrl,
    });
    processes.push(ingress);
    // Every inbound half this process runs has started once it says it is running.
    await waitFor('the ingress to start', () => ingress.stderr().includes('"msg":"Countersign is running"'));
    expect(slack.connected).toBeGreaterThanOrEqual(1);
    expect(discord.gateway.countOp(2)).toBe(0);
    expect(discord.gateway.sessions).toHaveLength(0);
  });
});
