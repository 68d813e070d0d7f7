import type { SlackActionMiddlewareArgs, SlackViewMiddlewareArgs } from '@slack/bolt';
import { z } from 'zod';
import type { AdapterContext } from '../platform.ts';
import { CONNECT_LINK_ACTION, denyReasonModal, fullArgumentsModal, type Block } from './blocks.ts';
import type { ClickedMessage } from '../../core/approval-card.ts';
import type { SlackOutbound } from './outbound.ts';
import type { SlackUserGroups } from './user-groups.ts';

export interface ActionDeps {
  outbound: SlackOutbound;
  groups: SlackUserGroups;
}

/**
 * Button clicks (block_actions): the core decodes and does what the value asks; this answers the
 * clicker the Slack way — modals for forms, ephemeral messages for what only they should see.
 */
export function createActionHandler(ctx: AdapterContext, deps: ActionDeps) {
  return async function onAction({ ack, body, action }: SlackActionMiddlewareArgs): Promise<void> {
    await ack();
    // A link button opens its URL in the browser, and Slack sends the click as well: nothing to do.
    if (isLinkClick(action)) return;
    const value = (action as { value?: string }).value ?? '';
    const user = body.user.id;
    // block_actions name the clicker's own team (another org's for a Slack Connect user).
    const team = (body.user as { team_id?: string }).team_id ?? (body as { team?: { id?: string } }).team?.id;
    const home = (body as { team?: { id?: string } }).team?.id;
    const person = await deps.groups.personOf(user, team, home);
    const channel = (body as { channel?: { id: string } }).channel?.id;
    const thread = (body as { message?: { thread_ts?: string } }).message?.thread_ts;
    const triggerId = (body as { trigger_id?: string }).trigger_id;
    const tell = async (text: string) => {
      if (channel) await deps.outbound.ephemeral(channel, user, text, thread);
    };
    const clicked = clickedMessage(ctx, deps, body);
    await ctx.pressButton(value, person, {
      openDenyForm: async (nonce) => {
        // The form says which card; who submits it is checked like a click when it comes back.
        const metadata = JSON.stringify({ nonce, channel, thread });
        if (triggerId) await deps.outbound.openModal(triggerId, denyReasonModal(metadata));
      },
      showFullArguments: async (call) => {
        if (!call) await tell('That call is no longer on record.');
        else if (triggerId) await deps.outbound.openModal(triggerId, fullArgumentsModal(call.tool, call.text));
      },
      tellClicker: tell,
      ...(clicked ? { clicked } : {}),
    });
  };
}

/** A click on a button that only opens a link (a Connect button): it has a `url`, and no value of ours. */
function isLinkClick(action: unknown): boolean {
  const clicked = action as { action_id?: unknown; url?: unknown };
  return clicked.action_id === CONNECT_LINK_ACTION || typeof clicked.url === 'string';
}

/** Where a block_actions click came from, and the URL that answers it (Slack's payload, loosely). */
const ClickSource = z.object({
  response_url: z.string().optional(),
  message: z.object({ ts: z.string().optional() }).optional(),
  container: z.object({ message_ts: z.string().optional() }).optional(),
});

/**
 * The clicked message, to be replaced through the click's response_url (outside the chat.update
 * budget); undefined when the payload has no URL or no message (a click on an ephemeral one).
 */
function clickedMessage(ctx: AdapterContext, deps: ActionDeps, body: unknown): ClickedMessage | undefined {
  const parsed = ClickSource.safeParse(body);
  if (!parsed.success) return undefined;
  const { response_url: responseUrl, message, container } = parsed.data;
  const messageId = message?.ts ?? container?.message_ts;
  if (!messageId || !responseUrl) return undefined;
  return {
    messageId,
    replace: (message) =>
      deps.outbound
        .replaceClicked(responseUrl, message as { text: string; blocks: Block[] })
        .catch((error: unknown) => {
          ctx.log.warn({ err: error }, 'could not update the card through response_url; using chat.update');
          throw error;
        }),
  };
}

/** What a Deny-with-reason form carries back in its private metadata. */
const DenyFormMetadata = z.object({
  nonce: z.string(),
  channel: z.string().optional(),
  thread: z.string().optional(),
});

/**
 * A submitted Deny-with-reason form (view_submission): acknowledged at once (the modal closes), then
 * the reason goes to the approval service, which verifies it like a click.
 */
export function createDenyFormHandler(ctx: AdapterContext, deps: ActionDeps) {
  return async function onDenyForm({ ack, body, view }: SlackViewMiddlewareArgs): Promise<void> {
    await ack();
    const metadata = DenyFormMetadata.safeParse(safeJson(view.private_metadata));
    const reason = view.state.values.reason?.reason?.value ?? '';
    const user = body.user.id;
    const person = await deps.groups.personOf(user, body.user.team_id ?? body.team?.id, body.team?.id);
    const result = metadata.success
      ? await ctx.approvals.denyWithReason(metadata.data.nonce, reason, person)
      : { ok: false as const, reason: 'That form is not one of ours.' };
    const channel = metadata.success ? metadata.data.channel : undefined;
    if (!result.ok && channel) {
      await deps.outbound.ephemeral(channel, user, result.reason, metadata.success ? metadata.data.thread : undefined);
    }
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
