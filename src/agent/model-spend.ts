import type { ModelProvider, ModelRequest, ModelRound, RoundCallbacks } from './model.ts';

/**
 * What the loop asks before each model call when spend limits apply (src/budgets implements it):
 * reserve the call's worst case, then settle it to what the call really used. The agent knows no
 * budget; it only obeys the answer.
 */
export interface ModelSpend {
  reserve(request: ModelRequest, model: string): Promise<SpendReservation>;
}

export type SpendReservation =
  /** The call may go ahead with at most `maxTokens` of output (the headroom left, or the request's). */
  | { ok: true; maxTokens: number; settle(round: ModelRound | undefined): Promise<void> }
  /** No budget has room for even a small call: the turn ends with `message`. */
  | { ok: false; message: string };

/** The loop's answer when a budget refused the call. */
export interface SpendRefused {
  refused: string;
}

/**
 * One model call under the spend limits: reserved before, capped to the headroom, settled after
 * with its real usage. A call that fails gives its reservation back (settled with nothing).
 */
export async function spendingCall(
  provider: ModelProvider,
  spend: ModelSpend | undefined,
  request: ModelRequest,
  callbacks: RoundCallbacks,
  signal: AbortSignal,
): Promise<ModelRound | SpendRefused> {
  if (!spend) return provider.streamRound(request, callbacks, signal);
  const reserved = await spend.reserve(request, provider.model);
  if (!reserved.ok) return { refused: reserved.message };
  let answer: ModelRound;
  try {
    answer = await provider.streamRound({ ...request, maxTokens: reserved.maxTokens }, callbacks, signal);
  } catch (error) {
    await reserved.settle(undefined).catch(() => undefined);
    throw error;
  }
  await reserved.settle(answer);
  return answer;
}
