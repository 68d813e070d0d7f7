import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { appMention, eventCallback, eventsApiEnvelope, ts } from '../../fixtures/slack/events.ts';
import { startHarness, waitFor, type Harness } from '../../helpers/harness.ts';

const CHANNEL = 'C0OPS00001';
const DM = 'D0ALICE001';
const ALICE = 'U0ALICE001';

/**
 * `message` events with a subtype, shaped as Slack documents them (docs.slack.dev/reference/events/
 * message/thread_broadcast and …/file_share): a thread reply also sent to the channel, carrying its
 * thread's root; a message with a file, carrying `files` (hosted by the fake); and two that are not someone writing to
 * the bot — a `/me` message and a channel join.
 */
function threadBroadcast(fields: { user: string; channel: string; text: string; thread_ts: string }) {
  const t = ts();
  return {
    type: 'message',
    subtype: 'thread_broadcast',
    text: fields.text,
    user: fields.user,
    ts: t,
    thread_ts: fields.thread_ts,
    root: {
      type: 'message',
      text: 'the thread it was sent from',
      user: fields.user,
      ts: fields.thread_ts,
      thread_ts: fields.thread_ts,
      reply_count: 1,
      reply_users_count: 1,
      latest_reply: t,
      reply_users: [fields.user],
      is_locked: false,
    },
    client_msg_id: randomUUID(),
    channel: fields.channel,
    event_ts: t,
    channel_type: 'channel',
  };
}

function fileShare(fields: {
  user: string;
  channel: string;
  channel_type: string;
  text: string;
  thread_ts?: string;
  file: unknown;
}) {
  const t = ts();
  return {
    type: 'message',
    subtype: 'file_share',
    text: fields.text,
    files: [fields.file],
    upload: true,
    user: fields.user,
    display_as_bot: false,
    ts: t,
    client_msg_id: randomUUID(),
    channel: fields.channel,
    event_ts: t,
    channel_type: fields.channel_type,
    ...(fields.thread_ts ? { thread_ts: fields.thread_ts } : {}),
  };
}

function otherSubtype(subtype: string, fields: { user: string; channel: string; channel_type: string; text: string }) {
  const t = ts();
  return { type: 'message', subtype, ...fields, ts: t, event_ts: t };
}

describe('Slack message subtypes', () => {
  let fake: FakeSlack;
  let h: Harness;
  beforeAll(async () => {
    fake = await FakeSlack.start();
    h = await startHarness({
      script: { rules: [{ rounds: [{ text: 'echo: {{lastUser}}' }] }] },
      env: fake.env({ SLACK_STREAMING: 'off' }),
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h.stop();
    await fake.close();
  });

  const answered = (channel: string, text: string, thread?: string) =>
    waitFor(
      async () =>
        fake.textIn(channel, thread).some((t) => t === text || t.startsWith(`${text}\n\n`)) ? true : undefined,
      // Generous: every answer here shares one workspace's chat.update budget (about 45 a
      // minute), so on a loaded CI machine a later test's answer can queue behind earlier ones.
      45_000,
      `"${text}" in ${channel}`,
    );
  const apiLog = () => fake.files.host('api.log', Buffer.from('GET /health 200\n'));
  /** Whether the delivery became a work item: its dedupe mark commits with it, before the ack. */
  const taken = async (eventId: string) =>
    (await h.app.pool.query('SELECT 1 FROM countersign.inbound_events WHERE event_id = $1', [`slack:${eventId}`]))
      .rowCount === 1;

  it('answers a thread reply also sent to the channel (thread_broadcast) like any reply in the thread', async () => {
    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'first' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    await answered(CHANNEL, 'echo: first', mention.ts);
    const broadcast = threadBroadcast({
      user: ALICE,
      channel: CHANNEL,
      text: 'and for everyone',
      thread_ts: mention.ts,
    });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, broadcast)));
    await answered(CHANNEL, 'echo: and for everyone', mention.ts);
  });

  it('answers the text of a message with a file (file_share), in a DM and in a thread', async () => {
    await fake.deliver(
      eventsApiEnvelope(
        eventCallback(
          fake.team,
          fileShare({ user: ALICE, channel: DM, channel_type: 'im', text: 'what is in this log?', file: apiLog() }),
        ),
      ),
    );
    await answered(DM, 'echo: what is in this log?');

    const mention = appMention({ user: ALICE, channel: CHANNEL, text: 'second' });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, mention)));
    await answered(CHANNEL, 'echo: second', mention.ts);
    const share = fileShare({
      user: ALICE,
      channel: CHANNEL,
      channel_type: 'channel',
      text: 'here is the log',
      thread_ts: mention.ts,
      file: apiLog(),
    });
    await fake.deliver(eventsApiEnvelope(eventCallback(fake.team, share)));
    await answered(CHANNEL, 'echo: here is the log', mention.ts);
  });

  it('ignores other subtypes, such as a /me message in a DM and a channel join', async () => {
    const me = eventCallback(
      fake.team,
      otherSubtype('me_message', { user: ALICE, channel: DM, channel_type: 'im', text: 'waves' }),
    );
    const join = eventCallback(
      fake.team,
      otherSubtype('channel_join', {
        user: ALICE,
        channel: CHANNEL,
        channel_type: 'channel',
        text: `<@${ALICE}> has joined the channel`,
      }),
    );
    await fake.deliver(eventsApiEnvelope(me));
    await fake.deliver(eventsApiEnvelope(join));
    expect(await taken(me.event_id)).toBe(false);
    expect(await taken(join.event_id)).toBe(false);
    // The same DM without a subtype is taken: the check above is not vacuous.
    const { subtype: _none, ...dm } = otherSubtype('none', {
      user: ALICE,
      channel: DM,
      channel_type: 'im',
      text: 'hi',
    });
    const plain = eventCallback(fake.team, dm);
    await fake.deliver(eventsApiEnvelope(plain));
    expect(await taken(plain.event_id)).toBe(true);
    expect(fake.textIn(DM)).not.toContain('echo: waves');
  });
});
