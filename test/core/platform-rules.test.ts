import { describe, expect, it } from 'vitest';
import { platformDirectory } from '../../src/adapters/registry.ts';
import { PlatformDirectory, type PlatformRules } from '../../src/core/platform-rules.ts';

const SLACK = platformDirectory().rulesOf('slack');

/** An embedding application's platform, described from scratch. */
const TEAMS: PlatformRules = {
  ...SLACK,
  name: 'teams',
  displayName: 'Teams',
  ids: { ...SLACK.ids, groupPrefix: 'teams-team' },
};

describe('the platform directory', () => {
  it('adds a platform that names itself and its groups with words of its own', () => {
    const platforms = platformDirectory([TEAMS]);
    expect(platforms.has('teams')).toBe(true);
    expect(platforms.all().map((r) => r.name)).toEqual(['slack', 'discord', 'console', 'teams']);
  });

  it('takes the same description twice (an application passing a built-in adapter back)', () => {
    expect(() => platformDirectory([SLACK])).not.toThrow();
  });

  it('refuses a second, different description of a known platform', () => {
    expect(() => platformDirectory([{ ...SLACK, workspaceScopedIds: false }])).toThrow(
      /"slack" is described twice, differently/,
    );
  });

  it("refuses a name or group prefix another platform's reads the same as: policy lines would change meaning", () => {
    // `slack-usergroup:S1` is a Slack user group today; a platform of that name would make it a person.
    expect(() => platformDirectory([{ ...TEAMS, name: 'slack-usergroup' }])).toThrow(
      /already a platform name or group prefix/,
    );
    // A group prefix `slack` would turn every `slack:U…` into that platform's group.
    expect(() => platformDirectory([{ ...TEAMS, ids: { ...TEAMS.ids, groupPrefix: 'slack' } }])).toThrow(
      /"slack" \(platform teams\) is already/,
    );
    expect(() => new PlatformDirectory([{ ...TEAMS, ids: { ...TEAMS.ids, groupPrefix: 'teams' } }])).toThrow(
      /its own name as its group prefix/,
    );
  });

  it('refuses a name that cannot be written in a policy', () => {
    for (const name of ['Teams', 'te:ams', 'te ams', '', '1teams']) {
      expect(() => platformDirectory([{ ...TEAMS, name }]), name).toThrow(/cannot name a platform/);
    }
  });
});
