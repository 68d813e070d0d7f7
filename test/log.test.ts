import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, defaultLogDestination, scrubSecrets } from '../src/log.ts';
import { readableDestination, readableLogLine } from '../src/log-line.ts';
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

describe('log lines at a terminal', () => {
  it('are one readable line each: time, level, message, fields, an error without its stack', () => {
    const lines: string[] = [];
    const log = createLogger('info', readableDestination({ write: (text: string) => lines.push(text) }));
    log.warn(
      { database: '127.0.0.1:5432/countersign', err: new Error('connect ECONNREFUSED\nsecond line') },
      'database connection lost',
    );
    expect(lines).toHaveLength(1);
    const [line = ''] = lines;
    expect(line.endsWith('\n')).toBe(true);
    expect(line.trimEnd().split('\n')).toHaveLength(1);
    expect(line).toMatch(
      /^\d\d:\d\d:\d\d WARN {2}database connection lost database=127\.0\.0\.1:5432\/countersign err="connect ECONNREFUSED second line"$/m,
    );
    expect(line).not.toContain('{');
    expect(line).not.toMatch(/\bat \//);
  });

  it('are JSON lines when stderr is not a terminal, readable ones when it is', () => {
    const readable = defaultLogDestination(true);
    const json = defaultLogDestination(false);
    expect(readable.constructor).not.toBe(json.constructor);
    expect(readableLogLine('{"level":30,"time":0,"msg":"Countersign is running","port":3000}')).toBe(
      '00:00:00 INFO  Countersign is running port=3000',
    );
  });
});
