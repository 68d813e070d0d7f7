import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, scrubSecrets } from '../src/log.ts';
import { loadConfig } from '../src/config.ts';
import { createTestDatabase } from './helpers/db.ts';
import { runCli } from './helpers/processes.ts';

const SECRETS = {
  SLACK_BOT_TOKEN: 'xoxb-111111111111-222222222222-abcdefghijklmnopqrstuvwx',
  ANTHROPIC_API_KEY: 'sk-ant-api03-secretsecretsecretsecret',
  DATABASE_URL_PASSWORD: 'hunter2hunter2',
};

describe('secrets in logs', () => {
  it('scrubs token shapes and connection-string passwords from messages and errors', () => {
    const lines: string[] = [];
    const log = createLogger(
      'info',
      new Writable({
        write(chunk, _enc, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    log.info(`posting with ${SECRETS.SLACK_BOT_TOKEN}`);
    log.error(
      { err: new Error(`connect postgres://app:${SECRETS.DATABASE_URL_PASSWORD}@db:5432/x failed`) },
      'db down',
    );
    log.info({ config: { apiKey: SECRETS.ANTHROPIC_API_KEY, botToken: SECRETS.SLACK_BOT_TOKEN } }, 'config');
    log.info(
      loadConfig({ SLACK_BOT_TOKEN: SECRETS.SLACK_BOT_TOKEN, SLACK_APP_TOKEN: 'xapp-1-A111-222-abc' }),
      'loaded',
    );
    const text = lines.join('');
    for (const secret of Object.values(SECRETS)) expect(text).not.toContain(secret);
    expect(text).not.toContain('xapp-1-A111-222-abc');
    expect(scrubSecrets('postgres://u:p4ss@h/db')).toBe('postgres://u:****@h/db');
  });

  it('keeps every configured secret out of a real process’s logs', async () => {
    const db = await createTestDatabase();
    try {
      const run = runCli(
        ['start'],
        {
          DATABASE_URL: db.url.replace('://', '://'),
          HTTP_PORT: '0',
          HTTP_HOST: '127.0.0.1',
          LOG_LEVEL: 'debug',
          AI_PROVIDER: 'scripted',
          OPENAI_API_KEY: 'sk-proj-verysecretkeyvalue1234',
          AI_PROVIDER_FALLBACK: '',
        },
        'hello\n',
      );
      expect((await run.exited).code, run.stderr()).toBe(0);
      const logs = run.stderr() + run.stdout();
      expect(logs).toContain('"msg":"turn finished"');
      expect(logs).not.toContain('sk-proj-verysecretkeyvalue1234');
    } finally {
      await db.drop();
    }
  });
});
