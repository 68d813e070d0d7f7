import type { WebClient } from '@slack/web-api';
import { slackErrorOf } from './api-errors.ts';

/** Answers that mean this install cannot read accounts (no `users:read`): nobody is known deactivated. */
const CANNOT_READ_ACCOUNTS = new Set(['missing_scope', 'not_allowed_token_type']);

/**
 * Whether a person's Slack account is deactivated, for work done in their name while they are not
 * there (a scheduled run). User groups cannot tell: a deactivated account is in none, like most
 * people. `users.info` can, but needs `users:read`, which Countersign does not ask for
 * (docs/slack.md); an operator who adds it gets the check, and without it every account counts as
 * active, as before. Other failures are thrown: the run then fails with the reason instead of
 * running in the name of an account nobody could look up.
 */
export class AccountStatus {
  readonly #client: WebClient;
  /** Set once Slack said this install may not read accounts: not asked again by this process. */
  #unreadable = false;

  constructor(client: WebClient) {
    this.#client = client;
  }

  async isDeactivated(user: string): Promise<boolean> {
    if (this.#unreadable) return false;
    try {
      const { user: account } = (await this.#client.users.info({ user })) as { user?: { deleted?: boolean } };
      return account?.deleted === true;
    } catch (error) {
      const code = slackErrorOf(error) ?? '';
      if (code === 'user_not_found') return true;
      if (CANNOT_READ_ACCOUNTS.has(code)) {
        this.#unreadable = true;
        return false;
      }
      throw error;
    }
  }
}
