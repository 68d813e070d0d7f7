import { createHash } from 'node:crypto';

/**
 * Prompt caching as the Anthropic API documents it, so a fake can bill what the real API would:
 *
 * - The prompt is a sequence of blocks in a fixed order: each tool, then the system blocks, then each
 *   message's content blocks. A block with `cache_control` is a breakpoint (at most four).
 * - For each breakpoint the API checks whether the prefix ending there was cached earlier, looking
 *   back block by block up to 20 blocks before the breakpoint; the longest prefix found is read
 *   (`cache_read_input_tokens`). A prefix is keyed by its exact content (and the model): one byte
 *   changed anywhere before it is a miss. `cache_control` itself is not part of the content.
 * - The prefix at each breakpoint is written (kept for the breakpoint's ttl, 5 minutes by default,
 *   1 hour with `ttl: '1h'`; every read refreshes it), but only when it is at least the model's
 *   minimum cacheable length (1024 tokens for Sonnet and Opus 4, 2048 for Haiku 3.5, 4096 for Opus
 *   4.5 and Haiku 4.5); tokens from the end of the read up to the last such breakpoint are billed as
 *   `cache_creation_input_tokens`; the rest as `input_tokens`.
 *
 * Tokens are estimated, not counted: a quarter of the UTF-8 bytes of each block's JSON (the same
 * estimate Countersign budgets with). Real tokenizers differ; the shares are what a benchmark reads.
 */

export interface PromptCacheOptions {
  /** The model's minimum cacheable prefix, in tokens (default 1024). */
  minTokens?: number;
  /** The clock (ms), so a test can let entries expire without waiting. */
  now?: () => number;
}

export interface CacheUsage {
  input: number;
  cacheRead: number;
  cacheWrite: number;
}

const LOOKBACK_BLOCKS = 20;
const TTL_MS: Record<string, number> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };

type Block = Record<string, unknown>;

function withoutCacheControl(block: Block): Block {
  const { cache_control: _ignored, ...rest } = block;
  return rest;
}

/** A block's token estimate: a quarter of its JSON's UTF-8 bytes, without cache_control. */
export function blockTokens(block: Block): number {
  return Math.ceil(Buffer.byteLength(JSON.stringify(withoutCacheControl(block)), 'utf8') / 4);
}

function contentBlocks(content: unknown): Block[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? (content as Block[]) : [];
}

/** The request's prompt as blocks in the API's order; a message block carries its role. */
function promptBlocks(body: Record<string, unknown>): Array<{ block: Block; key: string; ttl?: string }> {
  const out: Array<{ block: Block; key: string; ttl?: string }> = [];
  const add = (block: Block, scope: string) => {
    const control = block.cache_control as { ttl?: string } | undefined;
    out.push({
      block,
      key: `${scope}:${JSON.stringify(withoutCacheControl(block))}`,
      ...(control ? { ttl: control.ttl ?? '5m' } : {}),
    });
  };
  for (const tool of (body.tools as Block[] | undefined) ?? []) add(tool, 'tool');
  for (const block of contentBlocks(body.system)) add(block, 'system');
  for (const m of (body.messages as Array<{ role: string; content: unknown }> | undefined) ?? []) {
    const blocks = contentBlocks(m.content);
    // A message boundary is part of the prompt: the first block of each message says so.
    blocks.forEach((b, i) => add(b, i === 0 ? `${m.role}:start` : m.role));
  }
  return out;
}

export interface PromptCache {
  /** Bills one request and updates the cache as the API would. */
  account(body: Record<string, unknown>): CacheUsage;
  /** Prefixes currently cached (tests). */
  readonly size: number;
}

export function createPromptCache(options: PromptCacheOptions = {}): PromptCache {
  const minTokens = options.minTokens ?? 1024;
  const now = options.now ?? Date.now;
  const entries = new Map<string, number>(); // prefix hash → expires at (ms)

  return {
    get size() {
      return entries.size;
    },
    account(body) {
      const blocks = promptBlocks(body);
      const hashes: string[] = [];
      const tokens: number[] = [];
      let hash = createHash('sha256')
        .update(`model:${String(body.model)}`)
        .digest('hex');
      let total = 0;
      for (const { block, key } of blocks) {
        hash = createHash('sha256').update(hash).update(key).digest('hex');
        total += blockTokens(block);
        hashes.push(hash);
        tokens.push(total);
      }
      const at = now();
      const live = (i: number) => (entries.get(hashes[i]!) ?? 0) > at;
      const breakpoints = blocks.flatMap((b, i) => (b.ttl ? [i] : []));

      // The longest cached prefix within the lookback window of any breakpoint.
      let readEnd = -1;
      for (const bp of breakpoints) {
        for (let i = bp; i >= Math.max(0, bp - LOOKBACK_BLOCKS + 1); i--) {
          if (live(i)) {
            readEnd = Math.max(readEnd, i);
            break;
          }
        }
      }
      const read = readEnd >= 0 ? tokens[readEnd]! : 0;
      if (readEnd >= 0) {
        // A read refreshes the entry's lifetime (at least the default ttl).
        entries.set(hashes[readEnd]!, Math.max(entries.get(hashes[readEnd]!)!, at + TTL_MS['5m']!));
      }

      let writeEnd = -1;
      for (const bp of breakpoints) {
        if (tokens[bp]! < minTokens) continue;
        const ttl = TTL_MS[blocks[bp]!.ttl!] ?? TTL_MS['5m']!;
        entries.set(hashes[bp]!, Math.max(entries.get(hashes[bp]!) ?? 0, at + ttl));
        writeEnd = Math.max(writeEnd, bp);
      }
      const write = writeEnd >= 0 ? Math.max(0, tokens[writeEnd]! - read) : 0;
      return { input: total - read - write, cacheRead: read, cacheWrite: write };
    },
  };
}

/** Output tokens of a streamed answer, with the same estimate. */
export function outputTokens(text: string, toolJson: string[]): number {
  const bytes = Buffer.byteLength(text + toolJson.join(''), 'utf8');
  return Math.max(1, Math.ceil(bytes / 4));
}
