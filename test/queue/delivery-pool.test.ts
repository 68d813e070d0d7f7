import { afterEach, describe, expect, it } from 'vitest';
import type { Script } from '../../src/agent/providers/scripted.ts';
import type { ReplyTarget } from '../../src/core/reply-target.ts';
import type { PostedMessage, ReplyOptions } from '../../src/reply/outbound.ts';
import { startHarness, waitFor, type Harness } from '../helpers/harness.ts';
import { RecordingOutbound } from '../helpers/recording-outbound.ts';
import { countingTool } from '../helpers/tools.ts';

/**
 * An approval card is posted in the delivery pool (#35): posting it may wait for a platform's rate
 * limit (a Discord channel's budget), and that wait must never hold a slot a turn could compute in.
 */

const script: Script = {
  rules: [
    {
      match: '^deploy',
      rounds: [{ text: 'Deploying.', toolCalls: [{ name: 'deploy_service', args: { service: 'api' } }] }],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

/** A platform whose budget for new messages with buttons (the card) the test holds shut. */
class CardBudgetOutbound extends RecordingOutbound {
  #open = false;
  #waiters: Array<() => void> = [];
  cardsWaiting = 0;

  open(): void {
    this.#open = true;
    for (const wake of this.#waiters.splice(0)) wake();
  }

  override async post(target: ReplyTarget, text: string, options?: ReplyOptions): Promise<PostedMessage> {
    const isCard = options?.buttons?.some((b) => b.label === 'Approve');
    if (isCard && !this.#open) {
      this.cardsWaiting += 1;
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    return super.post(target, text, options);
  }
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

describe('the delivery pool', () => {
  it('posts a card that waits for the platform while the only turn slot answers someone else', async () => {
    const outbound = new CardBudgetOutbound();
    // One turn slot and no express pool: with the card's job in that slot, the other turn could not run.
    h = await startHarness({
      script,
      outbound,
      tools: [countingTool('deploy_service', [], { risk: 'medium', result: 'deployed' })],
      env: { WORKER_CONCURRENCY: '1', EXPRESS_CONCURRENCY: '0' },
    });
    const parked = await h.say('delivery-park', 'deploy api');
    expect((await h.settled(parked.id)).status).toBe('awaiting_approval');
    await waitFor(async () => (outbound.cardsWaiting > 0 ? true : undefined), 10_000, 'the card to wait');

    const other = await h.say('delivery-other', 'hello');
    expect((await h.settled(other.id)).status).toBe('done');
    expect(outbound.channelText('delivery-other').join('\n')).toContain('ok');

    outbound.open();
    const card = await waitFor(
      async () =>
        [...outbound.messages.values()].find(
          (m) => m.channel === 'delivery-park' && m.buttons?.some((b) => b.label === 'Approve'),
        ),
      10_000,
      'the card',
    );
    expect(card.text).toContain('deploy_service');
  });
});
