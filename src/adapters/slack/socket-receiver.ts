import { SocketModeReceiver, type App, type Receiver, type ReceiverEvent } from '@slack/bolt';
import type { Logger } from 'pino';

/** What @slack/socket-mode hands to a `slack_event` listener (see SocketModeClient#onWebSocketMessage). */
interface SocketModeEnvelope {
  ack: (response?: Record<string, unknown>) => Promise<void>;
  envelope_id: string;
  type: string;
  body: Record<string, unknown>;
  retry_num?: number;
  retry_reason?: string;
}

/**
 * Bolt's SocketModeReceiver, with Events API envelopes acknowledged only after Bolt has finished
 * processing them. Bolt acks an event before running its listeners (App.processEvent), and its
 * SocketModeReceiver passes that ack straight to the socket, ignoring processBeforeResponse; so an
 * event whose enqueue failed would be acked and never redelivered. Here the ack of an events_api
 * envelope is held until processing resolves, and withheld when it fails: Slack redelivers an
 * envelope that is not acked (with retry_attempt / retry_reason). Slash commands and interactivity
 * are acked when their listeners call ack(), inside Slack's 3 seconds, as before.
 */
export class DurableSocketModeReceiver implements Receiver {
  readonly #inner: SocketModeReceiver;
  readonly #log: Logger;
  #app: App | undefined;

  constructor(options: ConstructorParameters<typeof SocketModeReceiver>[0], log: Logger) {
    this.#inner = new SocketModeReceiver(options);
    this.#log = log;
    // Replace the receiver's own dispatch (registered in its constructor) with ours.
    this.#inner.client.removeAllListeners('slack_event');
    this.#inner.client.on('slack_event', (envelope: SocketModeEnvelope) => {
      void this.#dispatch(envelope);
    });
  }

  init(app: App): void {
    this.#app = app;
    this.#inner.init(app);
  }

  start(): Promise<unknown> {
    return this.#inner.start();
  }

  stop(): Promise<unknown> {
    return this.#inner.stop();
  }

  async #dispatch(envelope: SocketModeEnvelope): Promise<void> {
    const held = envelope.type === 'events_api';
    let acked = false;
    let response: Record<string, unknown> | undefined;
    const ack = async (ackResponse?: unknown) => {
      if (acked) return;
      acked = true;
      // A string ack (a slash command's text) is sent as { text } by the socket client.
      const body = typeof ackResponse === 'string' ? { text: ackResponse } : (ackResponse as typeof response);
      if (held) response = body;
      else await envelope.ack(body);
    };
    const event: ReceiverEvent = {
      body: envelope.body,
      ack,
      ...(envelope.retry_num !== undefined ? { retryNum: envelope.retry_num } : {}),
      ...(envelope.retry_reason !== undefined ? { retryReason: envelope.retry_reason } : {}),
    };
    try {
      await this.#app?.processEvent(event);
      if (held) await envelope.ack(response);
    } catch (error) {
      this.#log.error(
        { err: error, envelopeId: envelope.envelope_id, eventId: envelope.body.event_id, retryNum: envelope.retry_num },
        held
          ? 'could not take in a Slack event; leaving its envelope unacknowledged so that Slack redelivers it'
          : 'Slack request handling failed',
      );
    }
  }
}
