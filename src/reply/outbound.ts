import type { DeliveryContext, ReplyDelivery } from './delivery.ts';
import type { ReplyButton, ReplyTarget } from '../core/reply-target.ts';
import type { FileRef } from '../core/work-item.ts';
import type { Requester } from '../core/person.ts';
import type { PartialEdit } from './rate-bucket.ts';

/** What `personNow` looks up. */
export interface PersonLookUp {
  /** False: the policy names none of the platform's groups, so they are not listed (only membership is checked). */
  groups?: boolean;
}

export interface PostedMessage {
  messageId: string;
}

export interface ReplyOptions {
  buttons?: ReplyButton[];
  /** The caller already took this edit's rate token with `reserve`. */
  reserved?: boolean;
}

export interface OutboundLimits {
  /** Text longer than this continues in a new message. */
  maxMessageLength: number;
  /** Minimum time between two edits of one reply. */
  minEditIntervalMs: number;
}

/** The speaking half of an adapter: a plain API client any worker process can use. */
export interface Outbound {
  readonly platform: string;
  readonly limits: OutboundLimits;
  post(target: ReplyTarget, text: string, options?: ReplyOptions): Promise<PostedMessage>;
  edit(target: ReplyTarget, messageId: string, text: string, options?: ReplyOptions): Promise<void>;
  /**
   * Posts `text` marked with `tag` (a work item's id) so that a later attempt can find it again: with
   * `findEarlier`, the message this app already posted with that tag is returned instead of a new one.
   * A worker killed between posting a placeholder and recording it then leaves no stray "…": its
   * successor takes the same message. Absent: the platform cannot find a post again, and `post` is used.
   */
  postTagged?(target: ReplyTarget, text: string, tag: string, findEarlier: boolean): Promise<PostedMessage>;
  /**
   * Waits for, and takes, the rate token of the next edit to `target`. Streams call it before they
   * decide what text to send, so that under a tight budget only the newest text is sent. Aborted by
   * `signal` while waiting, the token is given back and the call throws. A stream's partial edit
   * (`partial`) waits behind every card and final text of the same budget (see PartialEdit).
   */
  reserve?(target: ReplyTarget, signal?: AbortSignal, partial?: PartialEdit): Promise<void>;
  /** Where a direct message to `user` goes (Slack conversations.open, a Discord DM channel); absent: no DMs. */
  directChannel?(user: string, workspace?: string): Promise<ReplyTarget>;
  /** A link a person can open to `messageId`, where the platform has one. */
  linkTo?(target: ReplyTarget, messageId: string): Promise<string | undefined>;
  /**
   * `person` as the platform knows them now where `place` is: their groups (Slack user groups,
   * Discord roles) looked up again, for work done in their name while they are not there (a
   * scheduled run). Undefined: they are no longer a member there. Throws when the platform could not
   * say. Absent: the platform has no groups to look up.
   */
  personNow?(person: Requester, place: ReplyTarget, lookUp?: PersonLookUp): Promise<Requester | undefined>;
  /**
   * The groups `person` is in wherever the bot can see them (the roles of every Discord server it
   * shares with them), for a budget that covers a group when they wrote outside any server (a DM
   * carries no roles). Throws when the platform could not say. Absent: `personNow` answers.
   */
  groupsAnywhere?(person: Requester): Promise<string[]>;
  /**
   * The platform's own way of showing a reply (Slack's native streaming), where it has one and it
   * is enabled; undefined (or absent): replies are shown by post and edit (EditDelivery).
   */
  createDelivery?(context: DeliveryContext): ReplyDelivery | undefined;
  /**
   * Shares a file in the target's conversation (Slack: an external upload completed into the thread;
   * Discord: a message with an attachment; a terminal: printed). Absent: the platform takes no files,
   * and callers post text instead.
   */
  upload?(target: ReplyTarget, file: OutboundFile): Promise<void>;
  /**
   * The bytes of a file a person sent (src/files), fetched only from the platform's own file hosts
   * and with its token only there. At most `maxBytes + 1` bytes come back, so the caller can tell an
   * oversized file without reading it all. Absent: files sent on this platform are named, not read.
   */
  download?(file: FileRef, options: { maxBytes: number; signal: AbortSignal }): Promise<Buffer>;
  /**
   * The files of the message `messageId` in the target's conversation, read from the platform, for an
   * event that did not carry them (Slack's app_mention). Absent: the events carry every file.
   */
  messageFiles?(target: ReplyTarget, messageId: string): Promise<FileRef[]>;
}

/** A file a reply shares: a diff, a report. */
export interface OutboundFile {
  /** The file's name as people see it, e.g. `countersign-1a2b3c4.diff`. */
  filename: string;
  content: Buffer;
  /** Its type, read from its bytes, where it is not text (an image shared with share_file); absent: text. */
  contentType?: string;
  /** A line posted with the file. */
  comment?: string;
}

/** Looks up the outbound client for a reply target's platform. */
export class OutboundRegistry {
  readonly #byPlatform = new Map<string, Outbound>();

  register(outbound: Outbound): void {
    this.#byPlatform.set(outbound.platform, outbound);
  }

  for(target: ReplyTarget): Outbound {
    const outbound = this.#byPlatform.get(target.platform);
    if (!outbound) {
      throw new Error(
        `No outbound client for platform "${target.platform}" in this process; is its adapter configured?`,
      );
    }
    return outbound;
  }
}
