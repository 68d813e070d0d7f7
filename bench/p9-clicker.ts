import { createInterface } from 'node:readline';
import { encodeDelivery, slackSignature } from '../test/fakes/slack/http-delivery.ts';

/**
 * P9's Slack side of the clicks, in a process of its own: the fake Slack (in the bench process)
 * is busy answering Countersign's API calls the moment the clicks land, so timing the answers there
 * would count the fake's own work as Countersign's. Reads a line `{ url, secret, payloads }` on
 * stdin, signs every request, prints `ready`, and on a second line (`go`) sends them all at once
 * and prints `{ clickedAt, acks: [ms…] }`. The `go` lets the bench start something else in the same
 * instant as the clicks (P10's mention), with the process's start-up and the signing behind it.
 */
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const nextLine = async () => {
  const { value, done } = await lines.next();
  if (done) throw new Error('P9: the clicker input ended early');
  return value as string;
};
const input = JSON.parse(await nextLine()) as {
  url: string;
  secret: string;
  payloads: unknown[];
  /** Slack gives up on an answer after 3 s; P10, which loads the machine with other mentions, waits longer. */
  timeoutMs?: number;
};
const timestamp = Math.floor(Date.now() / 1000);
const requests = input.payloads.map((interaction) => {
  const { contentType, body } = encodeDelivery({ interaction });
  return {
    body,
    headers: {
      'content-type': contentType,
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': slackSignature(input.secret, timestamp, body),
    },
  };
});
process.stdout.write('ready\n');
await nextLine();
const clickedAt = Date.now();
const acks = await Promise.all(
  requests.map(async ({ body, headers }) => {
    const sent = performance.now();
    const res = await fetch(input.url, {
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.timeout(input.timeoutMs ?? 3000),
    });
    await res.text();
    if (res.status !== 200) throw new Error(`P9: a click was answered ${res.status}`);
    return performance.now() - sent;
  }),
);
process.stdout.write(JSON.stringify({ clickedAt, acks }));
