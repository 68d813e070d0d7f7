import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isExempt, platformMentions, platformMentionsOf, platformNames } from './platform-names.ts';

/**
 * Issue 32: the code outside src/adapters/ does not know which platforms exist. The adapter registry
 * lives in src/adapters/; only the composition root (src/config.ts, src/app.ts) names the adapters
 * it wires. Everything else under src/ (src/cli.ts included) stays platform-blind: no platform in a
 * string, an identifier or a branch. Comments may still name platforms: they explain, they do not
 * decide.
 *
 * The platforms are the folders of src/adapters/. Matching is by whole word, case-insensitive, with
 * camelCase and snake_case split into words (`slackRules`, `isSlack`, `SLACK_X`, 'discord-role'),
 * except that `console`, being JavaScript's global object too, counts only as a key: see
 * platform-names.ts for that rule.
 */

const REPO = path.resolve(import.meta.dirname, '../..');
const PLATFORMS = ['console', 'discord', 'slack'];

const scan = (source: string) =>
  platformMentionsOf('made.ts', source, PLATFORMS).map((m) => `${m.line}: ${m.platforms.join(',')} ${m.token}`);

describe('platform names outside src/adapters/', () => {
  it('takes the platforms from the folders of src/adapters/', () => {
    expect(platformNames(REPO)).toEqual(expect.arrayContaining(PLATFORMS));
  });

  it('scopes the check to src/ less the adapters and the composition root', () => {
    expect(isExempt('src/adapters/slack/index.ts')).toBe(true);
    expect(isExempt('src/adapters/registry.ts')).toBe(true);
    expect(isExempt('src/config.ts')).toBe(true);
    expect(isExempt('src/app.ts')).toBe(true);
    expect(isExempt('src/cli.ts')).toBe(false);
    expect(isExempt('src/core/platform-rules.ts')).toBe(false);
  });

  it('would catch a platform named in a string, an identifier, a branch and a template', () => {
    const source = [
      `const a = 'slack';`,
      `const SLACK_X = 1;`,
      `if (platform === 'discord') go();`,
      'const key = `${x}:slack`;',
      `const slackRules = isSlack(y) ? 'discord-role' : "CONSOLE";`,
      `const help = 'slack or discord';`,
      `const url = 'https://example.com//slack';`,
      `const adapters = { console: consoleAdapter }; adapters.console.start();`,
      `const id = \`\${user}:console\`;`,
    ].join('\n');
    expect(scan(source)).toEqual([
      `1: slack 'slack'`,
      `2: slack SLACK_X`,
      `3: discord 'discord'`,
      '4: slack `${x}:slack`',
      `5: slack slackRules`,
      `5: slack isSlack`,
      `5: discord 'discord-role'`,
      `5: console "CONSOLE"`,
      `6: discord,slack 'slack or discord'`,
      `7: slack 'https://example.com//slack'`,
      `8: console console`,
      `8: console consoleAdapter`,
      `8: console console`,
      '9: console `${user}:console`',
    ]);
  });

  it('would not flag comments, the console global, or prose that says "console"', () => {
    const source = [
      `// Slack threads replies; Discord does not.`,
      `/** Renders for Slack, Discord and the console. */`,
      `/* slack */ const a = 1;`,
      `console.log('hi'); console.error(err);`,
      `const write = console.warn.bind(console);`,
      `throw new Error('see the console output');`,
      `const slackness = 'discordant';`,
    ].join('\n');
    expect(scan(source)).toEqual([]);
  });

  it('names no platform in code outside src/adapters/, src/config.ts and src/app.ts', () => {
    const found = platformMentions(REPO).map((m) => `${m.file}:${m.line}: ${m.token}`);
    // The count fails the test; the message is the to-do list, one token a line.
    expect(found.length, `platform names to remove:\n${found.join('\n')}\n`).toBe(0);
  });
});
