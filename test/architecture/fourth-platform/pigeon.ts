import type { AdapterContext, ButtonSurface, PlatformAdapter } from '../../../src/adapters/platform.ts';
import type { PlatformRules } from '../../../src/core/platform-rules.ts';
import type { ReplyTarget } from '../../../src/core/reply-target.ts';
import type { Outbound, PostedMessage, ReplyOptions } from '../../../src/reply/outbound.ts';
import { Priority } from '../../../src/core/work-item.ts';

/**
 * A fourth chat platform, built only from the public adapter interface (src/adapters/platform.ts and
 * the plain data of src/core): if it can be mentioned, show a card, take a click and answer, a new
 * platform needs no edit outside its own folder. Pigeon has lofts (workspaces), perches (channels)
 * and birds (people); a perch whose id starts with `nest-` is a direct conversation.
 */
const PIGEON_RULES: PlatformRules = {
  name: 'pigeon',
  displayName: 'Pigeon Post',
  ids: {
    user: /^bird-[a-z]+$/,
    workspace: /^loft-[0-9]+$/,
    channel: /^(perch|nest)-[0-9]+$/,
    examples: { user: 'bird-alice', workspace: 'loft-1', channel: 'perch-1' },
    upperCase: false,
  },
  workspaceScopedIds: false,
  foreignIdsAreGuests: false,
  unknownWorkspace: 'loft-0',
  operatorTerminal: false,
  isDirect: (reply) => reply.channel.startsWith('nest-'),
  capabilities: { feedback: false, steersByDefault: false, nativeStream: false, modals: false, ephemeral: true },
};

export interface PigeonMessage {
  id: string;
  perch: string;
  text: string;
  buttons: NonNullable<ReplyOptions['buttons']>;
}

/** The speaking half: messages kept in memory, as a protocol peer would show them. */
class PigeonOutbound implements Outbound {
  readonly platform = PIGEON_RULES.name;
  readonly limits = { maxMessageLength: 4000, minEditIntervalMs: 10 };
  readonly messages = new Map<string, PigeonMessage>();
  #next = 1;

  async post(target: ReplyTarget, text: string, options?: ReplyOptions): Promise<PostedMessage> {
    const id = `note-${this.#next++}`;
    this.messages.set(id, { id, perch: target.channel, text, buttons: options?.buttons ?? [] });
    return { messageId: id };
  }

  async edit(_target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions): Promise<void> {
    const message = this.messages.get(messageId);
    if (!message) throw new Error(`no note ${messageId}`);
    message.text = text;
    message.buttons = options?.buttons ?? [];
  }
}

/** What a bird sees privately (a refusal, a vote recorded). */
interface Whisper {
  bird: string;
  text: string;
}

export interface Pigeon {
  adapter: PlatformAdapter;
  outbound: PigeonOutbound;
  whispers: Whisper[];
  /** A bird coos at the bot on a perch; returns what the core said. */
  mention(bird: string, perch: string, text: string): ReturnType<AdapterContext['admit']>;
  /** A bird pecks a button of a note. */
  peck(bird: string, value: string): Promise<void>;
}

const LOFT = 'loft-1';

export function createPigeon(): Pigeon {
  const outbound = new PigeonOutbound();
  const whispers: Whisper[] = [];
  let context: AdapterContext | undefined;
  const ctx = () => {
    if (!context) throw new Error('pigeon is not listening');
    return context;
  };
  const person = (bird: string) => ({ platform: PIGEON_RULES.name, userId: bird, workspace: LOFT });
  let coos = 0;
  return {
    outbound,
    whispers,
    adapter: {
      rules: PIGEON_RULES,
      outbound,
      async startInbound(given) {
        context = given;
        return { stop: async () => void (context = undefined) };
      },
    },
    mention(bird, perch, text) {
      const place = { platform: PIGEON_RULES.name, channel: perch, workspace: LOFT };
      const coo = `coo-${++coos}`;
      return ctx().admit({
        requester: person(bird),
        place,
        eventId: coo,
        draft: {
          type: 'CHAT',
          priority: Priority.CRITICAL,
          conversationId: `${PIGEON_RULES.name}:${perch}:${coo}`,
          input: { prompt: text },
          payload: {},
          reply: place,
          placeholder: '…',
        },
      });
    },
    async peck(bird, value) {
      const surface: ButtonSurface = {
        openDenyForm: async () => void whispers.push({ bird, text: 'Pigeon has no forms: peck Deny.' }),
        showFullArguments: async (call) => void whispers.push({ bird, text: call ? call.text : 'gone' }),
        tellClicker: async (text) => void whispers.push({ bird, text }),
      };
      await ctx().pressButton(value, person(bird), surface);
    },
  };
}
