import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeDiscord } from '../../fakes/discord/index.ts';
import type { StoredMessage } from '../../fakes/discord/world.ts';
import { buttonInteraction, dmMessage } from '../../fixtures/discord/payloads.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { countingTool } from '../../helpers/tools.ts';
import type { Script } from '../../../src/agent/providers/scripted.ts';
import { LIMITS } from '../../../src/adapters/discord/limits.ts';

const runs: string[] = [];
const deployTool = countingTool('deploy_service', runs, { risk: 'medium', result: 'deployed' });

const deploy = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ name: 'deploy_service', args: { service: `s${i}` } }));
const script: Script = {
  rules: [
    {
      match: 'deploy twelve',
      rounds: [{ text: 'Deploying twelve.', toolCalls: deploy(12) }, { text: 'Twelve handled.' }],
    },
    {
      match: 'deploy thirteen',
      rounds: [{ text: 'Deploying thirteen.', toolCalls: deploy(13) }, { text: 'Thirteen handled.' }],
    },
    {
      match: 'deploy sixteen',
      rounds: [{ text: 'Deploying sixteen.', toolCalls: deploy(16) }, { text: 'Sixteen handled.' }],
    },
    { rounds: [{ text: 'ok' }] },
  ],
};

type Button = { label: string; custom_id: string };
type Row = { type: number; components: Button[] };
const rowsOf = (m: StoredMessage) => (m.message.components ?? []) as Row[];
const idsOf = (m: StoredMessage) => rowsOf(m).flatMap((r) => r.components.map((b) => b.custom_id));

/** Every character Discord counts toward a message's 6000-character embed total. */
function embedChars(m: StoredMessage): number {
  const embeds = (m.message.embeds ?? []) as Array<{
    title?: string;
    description?: string;
    footer?: { text: string };
    fields?: Array<{ name: string; value: string }>;
  }>;
  return embeds.reduce(
    (sum, e) =>
      sum +
      (e.title?.length ?? 0) +
      (e.description?.length ?? 0) +
      (e.footer?.text.length ?? 0) +
      (e.fields ?? []).reduce((s, f) => s + f.name.length + f.value.length, 0),
    0,
  );
}

describe('approval cards with more calls than one Discord message holds', () => {
  let fake: FakeDiscord;
  let db: TestDatabase;
  let h: Harness;

  beforeAll(async () => {
    fake = await FakeDiscord.start();
    db = await createTestDatabase();
    h = await startHarness({
      db,
      script,
      tools: [deployTool],
      env: {
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.scene.applicationId,
        DISCORD_GUILD_ID: fake.scene.guildId,
        DISCORD_API_URL: fake.restUrl,
        APPROVERS: `discord:${fake.scene.human.id}`,
      },
    });
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
    await db.drop();
  });

  /** Asks for `n` deploys in the DM and returns the card's messages, in posting order, once the last is up. */
  async function cardFor(text: string): Promise<{ nonce: string; messages: StoredMessage[] }> {
    const before = fake.messagesIn(fake.scene.dmChannelId).length;
    fake.userSays(dmMessage(fake.scene, { text }));
    const last = await fake.until(
      () =>
        fake
          .messagesIn(fake.scene.dmChannelId)
          .slice(before)
          .find((m) => idsOf(m).some((id) => id.endsWith('.A'))),
      'the last message of the card',
      45_000,
    );
    const nonce = idsOf(last)
      .find((id) => id.endsWith('.A'))!
      .slice(0, -2);
    const messages = fake
      .messagesIn(fake.scene.dmChannelId)
      .slice(before)
      .filter((m) => idsOf(m).some((id) => id.startsWith(`${nonce}.`)));
    return { nonce, messages };
  }

  const click = (customId: string, message: StoredMessage) =>
    fake.interact(buttonInteraction(fake.scene, { customId, message: message.message, inDm: true }));

  const untilGone = (message: StoredMessage, customId: string) =>
    fake.until(
      () => (idsOf(fake.message(message.message.id as string)!).includes(customId) ? undefined : true),
      `${customId} to leave its message`,
      45_000,
    );

  function expectWithinDiscordLimits(messages: StoredMessage[]): void {
    for (const m of messages) {
      expect(rowsOf(m).length).toBeLessThanOrEqual(LIMITS.actionRows);
      for (const row of rowsOf(m)) expect(row.components.length).toBeLessThanOrEqual(LIMITS.buttonsPerRow);
      expect((m.message.content as string).length).toBeLessThanOrEqual(LIMITS.messageContent);
      expect(embedChars(m)).toBeLessThanOrEqual(LIMITS.embedTotal);
    }
  }

  it('shows all twelve calls, each decidable on its own, and their decisions reach the approval service', async () => {
    runs.length = 0;
    const { nonce, messages } = await cardFor('deploy twelve');
    expect(messages).toHaveLength(3);
    expectWithinDiscordLimits(messages);
    // Every call has its own Approve and Deny, and every call is listed beside its buttons.
    const ids = messages.flatMap(idsOf);
    for (let i = 0; i < 12; i++) expect(ids).toEqual(expect.arrayContaining([`${nonce}.a${i}`, `${nonce}.d${i}`]));
    for (const m of messages) {
      const shown = JSON.stringify(m.message.embeds);
      for (const id of idsOf(m).filter((x) => /\.a\d+$/.test(x))) {
        expect(shown).toContain(`#${Number(id.slice(nonce.length + 2)) + 1} deploy_service`);
      }
    }
    // Approve all / Deny all only on the last message, which was posted after every call.
    expect(
      messages
        .slice(0, -1)
        .flatMap(idsOf)
        .filter((id) => /\.[AD]$/.test(id)),
    ).toEqual([]);
    expect(idsOf(messages.at(-1)!).slice(-3)).toEqual([`${nonce}.A`, `${nonce}.D`, `${nonce}.R`]);

    // One call decided on each message, by its own button.
    click(`${nonce}.d0`, messages[0]!);
    await untilGone(messages[0]!, `${nonce}.d0`);
    click(`${nonce}.a5`, messages[1]!);
    await untilGone(messages[1]!, `${nonce}.a5`);
    click(`${nonce}.a11`, messages[2]!);
    await untilGone(messages[2]!, `${nonce}.a11`);
    expect(runs).toEqual([]);

    click(`${nonce}.A`, messages[2]!);
    await fake.until(() => (runs.length === 11 ? true : undefined), 'eleven deploys', 45_000);
    expect(runs.sort()).toEqual(Array.from({ length: 11 }, (_, i) => `s${i + 1}`).sort());
    // Decided: no message of the card keeps a button.
    for (const m of messages) {
      await fake.until(
        () => (rowsOf(fake.message(m.message.id as string)!).length === 0 ? true : undefined),
        'the card to lose its buttons',
        45_000,
      );
    }
  });

  it('shows sixteen calls over four messages within Discord’s limits; Deny all denies them all', async () => {
    runs.length = 0;
    const { nonce, messages } = await cardFor('deploy sixteen');
    expect(messages).toHaveLength(4);
    expectWithinDiscordLimits(messages);
    const ids = messages.flatMap(idsOf);
    for (let i = 0; i < 16; i++) expect(ids).toEqual(expect.arrayContaining([`${nonce}.a${i}`, `${nonce}.d${i}`]));
    expect(messages.at(-1)!.message.content as string).toMatch(/#1–#16/);

    click(`${nonce}.a15`, messages[3]!);
    await untilGone(messages[3]!, `${nonce}.a15`);
    click(`${nonce}.D`, messages[3]!);
    await fake.until(
      () => (fake.botTextIn(fake.scene.dmChannelId).some((t) => t.includes('Sixteen handled.')) ? true : undefined),
      'the answer after the decision',
      45_000,
    );
    // Only the call approved on its own ran; Deny all covered the fifteen still open.
    expect(runs).toEqual(['s15']);
  });

  it('stays one card when its first message is clicked while the later ones are still being posted', async () => {
    runs.length = 0;
    const before = fake.messagesIn(fake.scene.dmChannelId).length;
    // The card's second message waits on the network until the click below has been decided.
    const isLaterCardMessage = (body: unknown) => {
      const ids = JSON.stringify((body as { components?: unknown } | undefined)?.components ?? []);
      return /\.a\d+"/.test(ids) && !/\.a0"/.test(ids);
    };
    const second = fake.holdNext('POST /channels/:channel_id/messages', isLaterCardMessage);
    fake.userSays(dmMessage(fake.scene, { text: 'deploy thirteen' }));
    const first = await fake.until(
      () =>
        fake
          .messagesIn(fake.scene.dmChannelId)
          .slice(before)
          .find((m) => idsOf(m).some((id) => id.endsWith('.a0'))),
      'the first message of the card',
      45_000,
    );
    await second.reached;
    const nonce = idsOf(first)
      .find((id) => id.endsWith('.a0'))!
      .slice(0, -3);
    click(`${nonce}.a0`, first);
    await waitFor(
      async () => {
        const { rows } = await h.app.pool.query<{ n: number }>(
          `SELECT jsonb_array_length(partial_decisions) AS n FROM countersign.approval_envelopes WHERE nonce = $1`,
          [nonce],
        );
        return rows[0]?.n === 1 ? true : undefined;
      },
      45_000,
      'the click on the first message to be decided',
    );
    second.release();

    // The first message shows the decision: its call's buttons go.
    await untilGone(first, `${nonce}.a0`);
    const cardMessages = () =>
      fake
        .messagesIn(fake.scene.dmChannelId)
        .slice(before)
        .filter((m) => JSON.stringify(m.history[0]!.components).includes(`"${nonce}.`));
    const last = await fake.until(
      () => cardMessages().find((m) => idsOf(m).includes(`${nonce}.A`)),
      'the last message of the card',
      45_000,
    );
    click(`${nonce}.A`, last);
    await fake.until(
      () => (fake.botTextIn(fake.scene.dmChannelId).some((t) => t.includes('Thirteen handled.')) ? true : undefined),
      'the answer after the decision',
      45_000,
    );
    expect(runs.sort()).toEqual(Array.from({ length: 13 }, (_, i) => `s${i}`).sort());
    // One card: each call was posted on exactly one message, and none keeps a button.
    const posted = cardMessages().flatMap((m) =>
      (m.history[0]!.components as Row[]).flatMap((r) => r.components.map((b) => b.custom_id)),
    );
    for (let i = 0; i < 13; i++) expect(posted.filter((id) => id === `${nonce}.a${i}`)).toHaveLength(1);
    for (const m of cardMessages()) {
      await fake.until(
        () => (rowsOf(fake.message(m.message.id as string)!).length === 0 ? true : undefined),
        'every message of the card to lose its buttons',
        45_000,
      );
    }
  });
});
