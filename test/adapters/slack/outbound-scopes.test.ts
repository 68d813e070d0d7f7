import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../../..');
const manifest = JSON.parse(readFileSync(path.join(root, 'slack/manifest.json'), 'utf8')) as {
  oauth_config: { scopes: { bot: string[] } };
};
const scopes = manifest.oauth_config.scopes.bot;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sources(full) : full.endsWith('.ts') ? [full] : [];
  });
}
/**
 * The one module that may call users.info: an operator's opt-in (docs/schedules.md), which takes a
 * missing users:read for "cannot tell" (test/adapters/slack/schedule-owner-groups.test.ts).
 */
const OPTIONAL_ACCOUNT_CHECK = path.join(root, 'src/adapters/slack/account-status.ts');
const code = sources(path.join(root, 'src'))
  .filter((f) => f !== OPTIONAL_ACCOUNT_CHECK)
  .map((f) => readFileSync(f, 'utf8'))
  .join('\n');

describe('the Slack app manifest', () => {
  it('asks for no users:read, and no Web API call needs it', () => {
    // users.info / users.list / users.profile.* / users.lookupByEmail are what users:read grants.
    expect(code).not.toMatch(/\busers\.(info|list|lookupByEmail|profile|conversations|getPresence)\b/);
    expect(scopes).not.toContain('users:read');
    // The opt-in account check answers "active" when the scope is missing, so nothing needs it.
    expect(readFileSync(OPTIONAL_ACCOUNT_CHECK, 'utf8')).toMatch(/'missing_scope'/);
  });

  it('is described by docs/slack.md scope by scope', () => {
    const doc = readFileSync(path.join(root, 'docs/slack.md'), 'utf8');
    for (const scope of scopes.filter((s) => !s.endsWith(':history'))) expect(doc).toContain(`\`${scope}\``);
    expect(doc).toContain('`*:history`');
    // Named only to say it is not asked for.
    expect(doc).toMatch(/does not ask for `users:read`/);
  });
});
