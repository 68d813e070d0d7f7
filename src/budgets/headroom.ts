import type { Attachment } from '../agent/messages.ts';
import type { ModelRequest } from '../agent/model.ts';
import type { ModelPrice } from '../usage/model-prices.ts';
import { pdfPages } from '../files/pdf-pages.ts';
import type { Budget } from '../policy/index.ts';
import type { PeriodRow } from './store.ts';

/**
 * How much of a model call fits the budgets that apply to it, purely from their locked periods.
 * The worst case of a call is its input (bounded above: see `inputBound`) plus `maxTokens` of
 * output; where the budgets leave less room the call gets fewer output tokens, and where not even
 * `MIN_OUTPUT_TOKENS` fit it is refused, naming the budget with the least room.
 */

/** The smallest output a call is worth making with: below it, the budget refuses the call. */
const MIN_OUTPUT_TOKENS = 256;

/** What a call may cost at most, before it is made. */
export interface CallBound {
  /** An upper bound of the input tokens (cached or not). */
  inputTokens: number;
  /** The output tokens asked for. */
  maxTokens: number;
  /** The model's price; absent: unpriced (a USD budget cannot hold it). */
  price: ModelPrice | undefined;
}

export type Fit =
  | { ok: true; maxTokens: number }
  | { ok: false; budget: Budget; period: PeriodRow | undefined; why: 'exhausted' | 'unpriced' };

const perToken = (perMillion: number) => perMillion / 1_000_000;

/** Input at the dearest way it could be billed: plain, a cache write (dearer on some APIs), or a cache read. */
const dearestInput = (price: ModelPrice) =>
  perToken(Math.max(price.input, price.cacheWrite ?? price.input, price.cacheRead ?? price.input));

/**
 * What an image is billed at most, in tokens, unless the model's price says more (`imageTokens`):
 * the APIs scale an image down to about 1.15 megapixels first.
 */
const IMAGE_TOKENS = 1_600;
/** What a PDF page is billed at most, in tokens: its text and an image of it. */
const PDF_PAGE_TOKENS = 3_000;
/** The pages assumed of a PDF whose pages cannot be counted: the most one request may carry. */
const PDF_PAGES_UNKNOWN = 100;

/**
 * What an attachment is billed at most, in tokens, beside its base64 bytes (counted with the rest
 * of the request): a small file can stand for far more — a 1 KB image of 1,000 × 1,000 pixels,
 * a compressed PDF whose every page is also sent as an image.
 */
function attachmentFloor(attachment: Attachment, imageTokens: number): number {
  if (attachment.kind === 'image') return imageTokens;
  // Counted once at intake; a document stored before the count was kept is counted here (linear, bounded).
  return (attachment.pages ?? pdfPages(Buffer.from(attachment.data, 'base64')) ?? PDF_PAGES_UNKNOWN) * PDF_PAGE_TOKENS;
}

/**
 * An upper bound of a request's input tokens at the models priced `prices`: its size in UTF-8 bytes,
 * each image counted at the most it is billed and each PDF at no less (`attachmentFloor`).
 * Tokenizers of the APIs Countersign speaks put at least one byte in a token, so the bound holds for every model without a tokenizer here;
 * it overestimates text (a token is about four bytes of English), which only makes the
 * reservation, never the spend, larger.
 */
export function inputBound(
  request: Pick<ModelRequest, 'system' | 'messages' | 'tools'>,
  prices: ReadonlyArray<ModelPrice | undefined> = [],
): number {
  const bytes = Buffer.byteLength(JSON.stringify([request.system, request.messages, request.tools]), 'utf8');
  const attachments = request.messages.flatMap((m) => (m.role === 'user' ? (m.attachments ?? []) : []));
  // Any model of a fallback chain may answer: an image counts at the most any of them bills.
  const imageTokens = Math.max(IMAGE_TOKENS, ...prices.map((p) => p?.imageTokens ?? 0));
  // An image is billed by its pixels, which the APIs scale down first, never by its file's size: its
  // base64 (in `bytes`) counts as the most it is billed instead. A PDF counts at its bytes or its pages, the more.
  return attachments.reduce(
    (bound, a) =>
      a.kind === 'image'
        ? bound - a.data.length + imageTokens
        : bound + Math.max(0, attachmentFloor(a, imageTokens) - a.data.length),
    bytes,
  );
}

/** What a budget has left in its current period (`period` absent: none used yet). */
const roomIn = (budget: Budget, period: PeriodRow | undefined) =>
  budget.limit + (period?.allowance ?? 0) - (period?.spent ?? 0) - (period?.reserved ?? 0);

/**
 * The least a call can cost and still be made, in the budget's unit: its input's bound and
 * `MIN_OUTPUT_TOKENS` of output (fewer if it asks for fewer). What a refusal says one call needs.
 */
export const smallestCall = (budget: Budget, call: CallBound): number =>
  worstCase(budget, Math.min(MIN_OUTPUT_TOKENS, call.maxTokens), call);

/**
 * The periods as they will stand once every call in flight has settled at nothing: whether waiting
 * for them can ever make room (their spend only shrinks what they hold; none can give back more).
 */
export const withoutHolds = (periods: PeriodRow[]): PeriodRow[] => periods.map((p) => ({ ...p, reserved: 0 }));

/** The output tokens that fit in `room` (in the budget's unit) after the input. */
function outputRoom(budget: Budget, room: number, call: CallBound): number {
  if (budget.unit === 'tokens') return Math.floor(room - call.inputTokens);
  const price = call.price!;
  const left = room - call.inputTokens * dearestInput(price);
  if (left < 0) return -1;
  return price.output === 0 ? Number.MAX_SAFE_INTEGER : Math.floor(left / perToken(price.output));
}

/** The worst case of a call with `maxTokens` of output, in the budget's unit (USD: the call is priced). */
export function worstCase(budget: Budget, maxTokens: number, call: CallBound): number {
  if (budget.unit === 'tokens') return call.inputTokens + maxTokens;
  const price = call.price!;
  return call.inputTokens * dearestInput(price) + maxTokens * perToken(price.output);
}

/** The first USD budget a call of an unpriced model cannot be counted against, if any. */
export const unpricedBudget = (budgets: Budget[], call: CallBound): Budget | undefined =>
  budgets.find((b) => b.unit === 'usd' && !call.price);

/** The budget that leaves a call the least output (the one to name when a call is crowded out). */
export function tightestBudget(budgets: Budget[], periods: PeriodRow[], call: CallBound): Budget {
  const outputLeft = (budget: Budget) => {
    const period = periods.find((p) => p.budget === budget.name && p.unit === budget.unit);
    return outputRoom(budget, roomIn(budget, period), call);
  };
  return budgets.reduce((tightest, budget) => (outputLeft(budget) < outputLeft(tightest) ? budget : tightest));
}

/**
 * How many output tokens of a call fit `budgets`, whose current periods (as locked) are `periods`:
 * the request's, or fewer where a budget has less room, or a refusal naming the tightest budget.
 */
export function fitCall(budgets: Budget[], periods: PeriodRow[], call: CallBound): Fit {
  const periodOf = (b: Budget) => periods.find((p) => p.budget === b.name && p.unit === b.unit);
  const unpriced = unpricedBudget(budgets, call);
  if (unpriced) return { ok: false, budget: unpriced, period: periodOf(unpriced), why: 'unpriced' };
  let maxTokens = call.maxTokens;
  let tightest: Budget | undefined;
  for (const budget of budgets) {
    const period = periodOf(budget);
    const fits = outputRoom(budget, roomIn(budget, period), call);
    if (fits < maxTokens) {
      maxTokens = fits;
      tightest = budget;
    }
  }
  if (tightest && maxTokens < Math.min(MIN_OUTPUT_TOKENS, call.maxTokens))
    return { ok: false, budget: tightest, period: periodOf(tightest), why: 'exhausted' };
  return { ok: true, maxTokens };
}
