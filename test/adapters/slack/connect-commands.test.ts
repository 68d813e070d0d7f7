import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSlack } from '../../fakes/slack/fake-slack.ts';
import { startFakeOAuthServer, type FakeOAuthServer } from '../../fakes/oauth/server.ts';
import { blockAction, interactiveEnvelope, slashCommand, slashCommandEnvelope } from '../../fixtures/slack/events.ts';
import { jobsIdle, startHarness, waitFor, type Harness } from '../../helpers/harness.ts';
import { CONNECT_LINK_ACTION } from '../../../src/adapters/slack/blocks.ts';

const ALICE = 'U0ALICE001';
const BOB = 'U0BOB00001';
const MALLORY = 'U0MALLORY1';
const CHANNEL = 'C0DEV00001';
const REFUSAL = 'Sorry, I only work for the dev team here.';
const PUBLIC_URL = 'http://127.0.0.1:9/';

interface Answer {
  response_type?: string;
  text?: string;
  blocks?: Array<{ type: string; elements?: Array<Record<string, unknown>>; text?: { text: string } }>;
}

describe('/countersign connect and connections on Slack', () => {
  let fake: FakeSlack;
  let oauth: FakeOAuthServer;
  let h: Harness;
  let dir: string;

  beforeAll(async () => {
    fake = await FakeSlack.start();
    oauth = await startFakeOAuthServer();
    dir = mkdtempSync(path.join(tmpdir(), 'cs-slack-connect-'));
    const policy = path.join(dir, 'policy.yaml');
    writeFileSync(
      policy,
      [
        'version: 1',
        `workspaces: [slack:${fake.team}]`,
        'requesters:',
        `  allow: [{ workspaces: [slack:${fake.team}] }]`,
        `  deny: [slack:${MALLORY}]`,
        `  refusal: "${REFUSAL}"`,
      ].join('\n'),
    );
    const mcp = path.join(dir, 'mcp.json');
    writeFileSync(mcp, JSON.stringify({ mcpServers: { github: { url: oauth.mcpUrl, auth: 'oauth' } } }));
    h = await startHarness({
      env: {
        ...fake.env({ SLACK_STREAMING: 'off' }),
        POLICY_FILE: policy,
        MCP_CONFIG: mcp,
        PUBLIC_URL,
        TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      },
    });
    await waitFor(async () => (fake.connected ? true : undefined), 10_000, 'the Socket Mode connection');
  });
  afterAll(async () => {
    await h?.stop();
    await fake?.close();
    await oauth?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `/countersign TEXT` with a response_url of its own: the ack's payload, and what came to that URL. */
  async function countersign(text: string, user = ALICE) {
    const responseUrl = fake.responseUrl();
    const ack = await fake.deliver(
      slashCommandEnvelope({
        ...slashCommand(fake.team, { command: '/countersign', text, user, channel: CHANNEL }),
        response_url: responseUrl,
      }),
    );
    const posted = () => fake.responses.filter((r) => responseUrl.endsWith(r.path)).map((r) => r.body as Answer);
    const answer = () => waitFor(async () => posted()[0], 20_000, `the response_url answer to /countersign ${text}`);
    return { ack: ack.payload as Answer | undefined, answer, posted };
  }

  /** Everything the bot put where more than one person sees it: channel messages and their API calls. */
  const public_ = () =>
    JSON.stringify([
      fake.messages.filter((m) => !m.ephemeralFor),
      fake.calls.filter((c) => c.method !== 'chat.postEphemeral'),
    ]);

  const linkButton = (answer: Answer) =>
    answer.blocks?.flatMap((b) => (b.type === 'actions' ? (b.elements ?? []) : [])).find((e) => 'url' in e);

  it('lists connect and connections in the help', async () => {
    const { ack } = await countersign('help');
    expect(ack?.response_type).toBe('ephemeral');
    expect(ack?.text).toContain('/countersign connect SERVER');
    expect(ack?.text).toContain('/countersign connections');
  });

  it('answers connect with a link button for the person alone, never in the channel', async () => {
    const { ack, answer } = await countersign('connect github');
    // Acknowledged with nothing to show: the answer comes privately through the response_url.
    expect(ack?.text).toBeUndefined();
    const shown = await answer();
    expect(shown.response_type).toBe('ephemeral');
    const button = linkButton(shown)!;
    expect(button).toMatchObject({ type: 'button', action_id: CONNECT_LINK_ACTION, text: { text: 'Connect github' } });
    const url = new URL(String(button.url));
    // The bot's own Connect page (it names whose account the sign-in is for), bound to a state.
    expect(url.origin).toBe(new URL(PUBLIC_URL).origin);
    expect(url.pathname).toBe('/oauth/start');
    expect(url.searchParams.get('s')).toBeTruthy();
    // The URL is in the text too, for clients that show no buttons (mrkdwn escapes & as &amp;).
    expect(shown.text?.replaceAll('&amp;', '&')).toContain(url.toString());
    expect(public_()).not.toContain(url.searchParams.get('s')!);
    expect(public_()).not.toContain('/authorize');
  });

  it('does nothing when the Connect link button is clicked (Slack sends the click too)', async () => {
    const { answer } = await countersign('connect github', BOB);
    const button = linkButton(await answer())!;
    const click = blockAction(fake.team, {
      user: BOB,
      channel: CHANNEL,
      messageTs: '1700000000.000100',
      value: '',
      actionId: String(button.action_id),
      label: 'Connect github',
    });
    const [action] = click.actions as Array<Record<string, unknown>>;
    delete action!.value;
    action!.url = button.url;
    const before = fake.calls.length;
    const responses = fake.responses.length;
    const ack = await fake.deliver(interactiveEnvelope(click));
    expect(ack).toBeDefined();
    await jobsIdle(h.app.pool);
    // No "that button is not ours" for the clicker, nothing anywhere.
    expect(fake.calls.slice(before).map((c) => c.method)).toEqual([]);
    expect(fake.responses.length).toBe(responses);
  });

  it('gives a person the policy refuses the refusal and nothing else', async () => {
    const registrations = oauth.registrations.length;
    const { ack, posted } = await countersign('connect github', MALLORY);
    expect(ack).toMatchObject({ response_type: 'ephemeral', text: REFUSAL });
    const listed = await countersign('connections', MALLORY);
    expect(listed.ack).toMatchObject({ response_type: 'ephemeral', text: REFUSAL });
    await jobsIdle(h.app.pool);
    expect(posted()).toEqual([]);
    expect(listed.posted()).toEqual([]);
    // The core was never asked: no client was registered at the authorization server for it.
    expect(oauth.registrations.length).toBe(registrations);
  });

  it('answers an unknown server privately, showing a mention in it as text', async () => {
    const { answer } = await countersign(`connect <@${BOB}>`);
    const shown = await answer();
    expect(shown.response_type).toBe('ephemeral');
    expect(shown.text).toContain('Known: github');
    expect(shown.text).not.toContain(`<@${BOB}>`);
    expect(shown.text).toContain(`&lt;@${BOB}&gt;`);
    expect(linkButton(shown)).toBeUndefined();
    const broadcast = await (await countersign('connect <!channel>')).answer();
    expect(broadcast.text).not.toContain('<!channel>');
  });

  it('answers connect without a server with its usage and the servers there are', async () => {
    const shown = await (await countersign('connect')).answer();
    expect(shown).toMatchObject({ response_type: 'ephemeral' });
    expect(shown.text).toContain('/countersign connect SERVER');
    expect(shown.text).toContain('`github`');
  });

  it('lists the person’s own connections privately', async () => {
    const shown = await (await countersign('connections')).answer();
    expect(shown.response_type).toBe('ephemeral');
    expect(shown.text).toContain('github: not connected');
    expect(public_()).not.toContain('Your connections');
  });
});
