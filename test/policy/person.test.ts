import { describe, expect, it } from 'vitest';
import { parsePerson, personMatches, type Person, type PersonPattern } from '../../src/policy/index.ts';
import { platforms } from './helpers.ts';

const pattern = (text: string): PersonPattern => {
  const parsed = parsePerson(text, platforms);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.pattern;
};
const problem = (text: string) => {
  const parsed = parsePerson(text, platforms);
  return parsed.ok ? undefined : parsed.message;
};
const ana: Person = { platform: 'slack', workspace: 'T0HOME001', user: 'U0ANA0001' };
const lookalike: Person = { ...ana, workspace: 'T0OTHER01' };

describe('parsePerson', () => {
  it('reads the short and the full forms', () => {
    expect(pattern('slack:U0ANA0001')).toEqual({ kind: 'user', platform: 'slack', user: 'U0ANA0001' });
    expect(pattern('slack:T0HOME001:U0ANA0001')).toEqual({
      kind: 'user',
      platform: 'slack',
      workspace: 'T0HOME001',
      user: 'U0ANA0001',
    });
    expect(pattern('discord:123456789012345678')).toMatchObject({ kind: 'user', platform: 'discord' });
  });

  it('reads whole workspaces, roles and user groups', () => {
    expect(pattern('slack:T0HOME001:*')).toEqual({ kind: 'members', platform: 'slack', workspace: 'T0HOME001' });
    expect(pattern('discord-role:222')).toEqual({
      kind: 'group',
      platform: 'discord',
      prefix: 'discord-role',
      group: '222',
    });
    expect(pattern('slack-usergroup:S0ONCALL1')).toEqual({
      kind: 'group',
      platform: 'slack',
      prefix: 'slack-usergroup',
      group: 'S0ONCALL1',
    });
  });

  it('refuses an id without a platform', () => {
    expect(problem('U123')).toMatch(/is not platform:user-id/);
  });

  it('refuses a lower-cased Slack id and says why', () => {
    expect(problem('slack:u123')).toMatch(/Slack ids are upper-case/);
  });

  it('refuses a space after the colon', () => {
    expect(problem('slack: U123')).toMatch(/contains a space/);
  });

  it('refuses an unknown platform and a Discord id that is not a number', () => {
    expect(problem('teams:abc')).toMatch(/unknown platform "teams"/);
    expect(problem('discord:alice')).toMatch(/not a discord user id/);
  });
});

describe('personMatches', () => {
  it('matches a short Slack id only in a home workspace', () => {
    expect(personMatches(platforms, pattern('slack:U0ANA0001'), ana, ['T0HOME001'])).toBe(true);
    expect(personMatches(platforms, pattern('slack:U0ANA0001'), lookalike, ['T0HOME001'])).toBe(false);
  });

  it('matches a short Slack id nowhere when no home is known (fails closed)', () => {
    expect(personMatches(platforms, pattern('slack:U0ANA0001'), ana)).toBe(false);
  });

  it('matches a full Slack id in its own workspace only', () => {
    expect(personMatches(platforms, pattern('slack:T0OTHER01:U0ANA0001'), lookalike)).toBe(true);
    expect(personMatches(platforms, pattern('slack:T0OTHER01:U0ANA0001'), ana)).toBe(false);
  });

  it('matches a short Discord id in every guild, since snowflakes are global', () => {
    const inGuild: Person = { platform: 'discord', workspace: '111', user: '42' };
    const inDm: Person = { platform: 'discord', workspace: '@me', user: '42' };
    expect(personMatches(platforms, pattern('discord:42'), inGuild)).toBe(true);
    expect(personMatches(platforms, pattern('discord:42'), inDm)).toBe(true);
  });

  it('matches a Discord role by the roles the adapter found', () => {
    const member: Person = { platform: 'discord', workspace: '111', user: '42', groups: ['222'] };
    expect(personMatches(platforms, pattern('discord-role:222'), member)).toBe(true);
    expect(personMatches(platforms, pattern('discord-role:223'), member)).toBe(false);
  });

  it('never matches across platforms', () => {
    expect(
      personMatches(platforms, pattern('discord:42'), { platform: 'slack', workspace: 'T0HOME001', user: '42' }),
    ).toBe(false);
  });
});
