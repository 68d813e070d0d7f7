import { describe, expect, it } from 'vitest';
import { isPlaceholderTitle } from '../../../src/adapters/slack/agent-sessions.ts';
import { threadOfConversation } from '../../../src/adapters/slack/conversation-ids.ts';
import { planTitle } from '../../../src/agent/loop.ts';

describe('session titles and the threads of expired conversations', () => {
  it('treats a greeting or a bare word as a title worth replacing, and a request as a real one', () => {
    expect(isPlaceholderTitle('hi')).toBe(true);
    expect(isPlaceholderTitle('hey there')).toBe(true);
    expect(isPlaceholderTitle(undefined)).toBe(true);
    expect(isPlaceholderTitle('deploy prod please')).toBe(false);
  });

  it('finds the thread of a Slack conversation id, and none for a DM or another platform', () => {
    expect(threadOfConversation('slack:T0TEAM:C0OPS:1700000000.000100')).toEqual({
      platform: 'slack',
      workspace: 'T0TEAM',
      channel: 'C0OPS',
      thread: '1700000000.000100',
    });
    expect(threadOfConversation('slack:T0TEAM:dm:D0ALICE')).toBeUndefined();
    expect(threadOfConversation('discord:G1:C1:T1')).toBeUndefined();
    expect(threadOfConversation('slack:T0TEAM:C0OPS')).toBeUndefined();
  });
});

describe('the plan a model states before its tool calls', () => {
  it('is the first line with text, without Markdown markers, at most 256 characters', () => {
    expect(planTitle('\n## Plan\n1. check logs')).toBe('Plan');
    expect(planTitle('- **Checking** the `api` now.\nthen more')).toBe('Checking the api now.');
    expect(planTitle('   \n')).toBeUndefined();
    const long = planTitle('x'.repeat(400))!;
    expect(long).toHaveLength(256);
    expect(long.endsWith('…')).toBe(true);
  });
});
