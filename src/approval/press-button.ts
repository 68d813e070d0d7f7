import type { Requester } from '../core/person.ts';
import type { ClickedMessage } from '../core/approval-card.ts';
import { decodeButton, type ScheduleButtonVerb } from '../core/buttons.ts';
import { TEXTS } from '../core/texts.ts';
import type { ApprovalService } from './service.ts';

/** How a platform answers the person who pressed a button. */
export interface ButtonSurface {
  /**
   * Called once, before anything slow, with what the answer will be: a private message to the
   * clicker, or a change of the clicked message (a card's decision, a stop). Platforms that must
   * acknowledge within seconds (Discord) defer here; a modal needs no acknowledgement first.
   */
  acknowledge?(answer: 'private' | 'update'): Promise<void>;
  /** Opens the Deny-with-reason form (a modal). */
  openDenyForm(nonce: string): Promise<void>;
  /** Shows one call's whole arguments to the clicker only; `undefined`: the call is no longer on record. */
  showFullArguments(call: { tool: string; text: string } | undefined): Promise<void>;
  /** A short answer only the clicker sees: a refusal, a recorded vote, a revoked grant. */
  tellClicker(text: string): Promise<void>;
  /** The message clicked, replaceable through the click itself (outside the platform's message budgets). */
  clicked?: ClickedMessage;
}

/** What pressing a button can do, beyond the approval service. */
export interface ButtonDeps {
  approvals: ApprovalService;
  recordFeedback(
    workItemId: string,
    by: Requester,
    vote: 'up' | 'down',
  ): Promise<{ ok: true; text: string } | { ok: false; reason: string }>;
  stopTurn(workItemId: string, by: Requester): Promise<{ ok: true } | { ok: false; reason: string }>;
  /** Ends `by`'s own connection to a per-person server; what to tell them. Absent: none are configured. */
  disconnect?(server: string, by: Requester): Promise<string>;
  /** Grants a budget's allowance offer (src/budgets): it checks the presser. */
  allowBudget?(offerId: string, by: Requester): Promise<{ ok: true; text: string } | { ok: false; reason: string }>;
  /**
   * Pauses, resumes or deletes a schedule, or shows its history, for its owner or an approver
   * (src/schedules); absent: none here.
   */
  changeSchedule?(
    change: ScheduleButtonVerb,
    scheduleId: string,
    by: Requester,
  ): Promise<{ ok: true; text: string } | { ok: false; reason: string }>;
}

/**
 * A pressed button, for every platform: its value decoded (core/buttons.ts) into one verb and done.
 * Every verb that changes something checks the presser itself (the approval service verifies a
 * card's click, stop and revoke check who asks, a vote checks the policy); a value that decodes to
 * nothing we wrote is handed to the approval service, which refuses it.
 */
export async function pressButton(
  deps: ButtonDeps,
  value: string,
  by: Requester,
  surface: ButtonSurface,
): Promise<void> {
  const button = decodeButton(value);
  switch (button.verb) {
    case 'deny-form':
      // The form says which card; who submits it is checked like a click when it comes back.
      return surface.openDenyForm(button.nonce);
    case 'full-arguments':
      return surface.showFullArguments(await deps.approvals.fullArguments(button.nonce, button.call));
    case 'full-diff': {
      await surface.acknowledge?.('private');
      const shared = await deps.approvals.shareFullDiff(button.nonce, by);
      return surface.tellClicker(shared.ok ? shared.text : shared.reason);
    }
    case 'feedback': {
      await surface.acknowledge?.('private');
      const recorded = await deps.recordFeedback(button.workItemId, by, button.vote);
      return surface.tellClicker(recorded.ok ? recorded.text : recorded.reason);
    }
    case 'revoke-grant': {
      await surface.acknowledge?.('private');
      const revoked = await deps.approvals.revokeGrant(button.grantId, by);
      return surface.tellClicker(revoked.ok ? TEXTS.grantRevoked(revoked.grant.id) : revoked.reason);
    }
    case 'disconnect': {
      await surface.acknowledge?.('private');
      return surface.tellClicker(
        deps.disconnect ? await deps.disconnect(button.server, by) : 'No per-person MCP servers are configured here.',
      );
    }
    case 'allow-budget': {
      await surface.acknowledge?.('private');
      const allowed = (await deps.allowBudget?.(button.offerId, by)) ?? {
        ok: false as const,
        reason: 'Budgets are not counted here.',
      };
      return surface.tellClicker(allowed.ok ? allowed.text : allowed.reason);
    }
    case 'schedule': {
      // Answered to the presser alone: a list of schedules is theirs, and a refusal is nobody else's business.
      await surface.acknowledge?.('private');
      const changed = deps.changeSchedule
        ? await deps.changeSchedule(button.change, button.scheduleId, by)
        : { ok: false as const, reason: 'Schedules are not available here.' };
      return surface.tellClicker(changed.ok ? changed.text : changed.reason);
    }
    case 'stop':
    case 'decide': {
      await surface.acknowledge?.('update');
      const result =
        button.verb === 'stop'
          ? await deps.stopTurn(button.workItemId, by)
          : await deps.approvals.click(button.value, by, surface.clicked);
      // Only the clicker sees why nothing happened.
      if (!result.ok) await surface.tellClicker(result.reason);
    }
  }
}
