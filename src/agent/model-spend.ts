import type { ModelProvider, ModelRequest, ModelRound, RoundCallbacks, TokenUsage } from './model.ts';

/**
 * What the loop asks before each model call when spend limits apply (src/budgets implements it):
 * reserve the call's worst case, then settle it to what the call really used. The agent knows no
 * budget; it only obeys the answer.
 */
export interface ModelSpend {
  /** `models`: every model that may answer the call (a fallback chain's), each at its own price. */
  reserve(request: ModelRequest, models: readonly string[]): Promise<SpendReservation>;
  /**
   * An external coding CLI's run (CODING_AGENT_COMMAND) against the same budgets: held at a
   * configured worst case before it starts, settled to what it reported after. Absent: this spend
   * cannot count a run, and a run under it is refused (spend that cannot be counted is not allowed).
   */
  reserveRun?(worst: RunWorstCase): Promise<RunReservation>;
}

/** What an external run is held at before it starts, in each budget unit, and for how long at most. */
export interface RunWorstCase {
  usd: number;
  tokens: number;
  /** Longer than the run may last: past it, housekeeping gives the hold back (its worker died). */
  leaseSeconds: number;
}

/** What an external run reported it spent; a unit absent: not reported, and the hold is spent whole. */
export interface RunBill {
  usd?: number;
  tokens?: number;
}

export type RunReservation =
  /** The run may start; `settle` replaces the hold by its bill, and never throws. */
  | { ok: true; settle(bill: RunBill): Promise<void> }
  /** A budget has no room for the run's worst case: it never starts, and the turn ends with `message`. */
  | { ok: false; message: string };

/** What one attempt was billed: the usage the API reported, at the model that billed it. */
interface Billed {
  usage: TokenUsage;
  model: string;
}

/**
 * What a call was billed for: a whole round, or what a call cut short had been billed so far —
 * and, in `earlier`, what attempts that failed before it (retried, or handed to a fallback) were
 * billed, which a provider charges all the same.
 */
export type SpentOn = (
  | { round: ModelRound }
  /** Stopped or failed: the usage the API reported before it ended (absent: nothing was reported). */
  | { cutShort: Billed | undefined }
) & {
  earlier?: Billed[];
  /**
   * An attempt streamed output and ended before the API reported its usage (OpenAI reports it only
   * in the last chunk): it was billed, at a cost not known, so the call's reservation is spent whole.
   */
  unreported?: true;
};

export type SpendReservation =
  /** The call may go ahead with at most `maxTokens` of output (the headroom left, or the request's). */
  | { ok: true; maxTokens: number; settle(spent: SpentOn): Promise<void> }
  /** No budget has room for even a small call: the turn ends with `message`. */
  | { ok: false; message: string };

/** The loop's answer when a budget refused the call. */
export interface SpendRefused {
  refused: string;
}

/**
 * What a call has been billed for while it streams: the usage the API last reported, with the
 * output raised to the UTF-8 bytes it streamed since — text shown and tool-call arguments (a token
 * is at least one byte) — because the API reports most of the output only at the end and a Stop
 * comes before it.
 */
class CallMeter {
  #reported: Billed | undefined;
  #streamedBytes = 0;
  /** What attempts that failed were billed, each at its own model. */
  readonly #earlier: Billed[] = [];
  /** An attempt that failed had streamed output the API never reported usage for. */
  #unreported = false;

  watch(callbacks: RoundCallbacks): RoundCallbacks {
    return {
      onText: (delta) => {
        this.#streamedBytes += Buffer.byteLength(delta, 'utf8');
        callbacks.onText(delta);
      },
      onRoundRestart: () => {
        this.#streamedBytes = 0;
        callbacks.onRoundRestart();
      },
      onOutputBytes: (bytes) => {
        this.#streamedBytes += bytes;
        callbacks.onOutputBytes?.(bytes);
      },
      onUsage: (usage, model) => {
        this.#reported = { usage, model };
        callbacks.onUsage?.(usage, model);
      },
      onAttemptFailed: () => {
        const billed = this.#attempt();
        if (billed) this.#earlier.push(billed);
        else if (this.#streamedBytes > 0) this.#unreported = true;
        this.#reported = undefined;
        this.#streamedBytes = 0;
        callbacks.onAttemptFailed?.();
      },
    };
  }

  /** The round that answered, with what failed attempts before it were billed. */
  answered(round: ModelRound): SpentOn {
    return { round, ...this.#withEarlier(this.#earlier), ...(this.#unreported ? { unreported: true } : {}) };
  }

  /** A call that ended without an answer: its attempts' bills, the last one as what was cut short. */
  billedSoFar(): SpentOn {
    const current = this.#attempt();
    const all = current ? [...this.#earlier, current] : [...this.#earlier];
    // The attempt cut short streamed output with no usage reported: as unknown as a failed one's.
    const unreported = this.#unreported || (!current && this.#streamedBytes > 0);
    return {
      cutShort: all.at(-1),
      ...this.#withEarlier(all.slice(0, -1)),
      ...(unreported ? { unreported: true } : {}),
    };
  }

  #withEarlier(earlier: Billed[]): { earlier?: Billed[] } {
    return earlier.length ? { earlier } : {};
  }

  /** The current attempt's bill so far, its output raised to the bytes it streamed. */
  #attempt(): Billed | undefined {
    const reported = this.#reported;
    if (!reported) return undefined;
    const outputTokens = Math.max(reported.usage.outputTokens, this.#streamedBytes);
    return { usage: { ...reported.usage, outputTokens }, model: reported.model };
  }
}

/**
 * One model call under the spend limits: reserved before (at the dearest model that may answer),
 * capped to the headroom, settled after with its real usage. A call that is stopped or fails is
 * settled at what the API reported it had billed, or at its whole reservation when it reported
 * nothing — never at zero, since a provider bills what it streamed before the cut. Attempts that
 * failed before the one that ended the call (retried, or handed to a fallback) count too.
 */
export async function spendingCall(
  provider: ModelProvider,
  spend: ModelSpend | undefined,
  request: ModelRequest,
  callbacks: RoundCallbacks,
  signal: AbortSignal,
): Promise<ModelRound | SpendRefused> {
  if (!spend) return provider.streamRound(request, callbacks, signal);
  const reserved = await spend.reserve(request, provider.models ?? [provider.model]);
  if (!reserved.ok) return { refused: reserved.message };
  const meter = new CallMeter();
  let answer: ModelRound;
  try {
    answer = await provider.streamRound({ ...request, maxTokens: reserved.maxTokens }, meter.watch(callbacks), signal);
  } catch (error) {
    await reserved.settle(meter.billedSoFar()).catch(() => undefined);
    throw error;
  }
  await reserved.settle(meter.answered(answer));
  return answer;
}
