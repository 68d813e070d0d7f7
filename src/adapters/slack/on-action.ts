import type { SlackActionMiddlewareArgs } from '@slack/bolt';
import type { AdapterContext } from '../platform.ts';
import { parseStopButton } from '../../core/buttons.ts';
import type { SlackOutbound } from './outbound.ts';
import type { SlackUserGroups } from './user-groups.ts';

export interface ActionDeps {
  outbound: SlackOutbound;
  groups: SlackUserGroups;
}

/**
 * Button clicks (block_actions): a Stop button stops its turn, any other value goes, with the
 * clicker, to the approval service. A refusal is answered ephemerally, to the clicker only.
 */
export function createActionHandler(ctx: AdapterContext, deps: ActionDeps) {
  return async function onAction({ ack, body, action }: SlackActionMiddlewareArgs): Promise<void> {
    await ack();
    const value = (action as { value?: string }).value ?? '';
    const user = body.user.id;
    // block_actions name the clicker's own team (another org's for a Slack Connect user).
    const team = (body.user as { team_id?: string }).team_id ?? (body as { team?: { id?: string } }).team?.id;
    const home = (body as { team?: { id?: string } }).team?.id;
    const groups = team && team === home ? await deps.groups.groupsOf(team, user) : [];
    const person = {
      platform: 'slack',
      userId: user,
      ...(team ? { workspace: team } : {}),
      ...(groups.length ? { groups } : {}),
    };
    const stopId = parseStopButton(value);
    const result = stopId ? await ctx.stopTurn(stopId, person) : await ctx.approvals.click(value, person);
    if (!result.ok) {
      const channel = (body as { channel?: { id: string } }).channel?.id;
      const thread = (body as { message?: { thread_ts?: string } }).message?.thread_ts;
      if (channel) await deps.outbound.ephemeral(channel, user, result.reason, thread);
    }
  };
}
