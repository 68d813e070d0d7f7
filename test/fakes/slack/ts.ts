/**
 * Slack message timestamps ("1700000000.000100"): seconds, a dot, six digits. They are a
 * message's id within its channel, so they must be unique and increasing. One counter per
 * process is shared by the fake and the fixture builders, so a user message a test builds and a
 * bot reply the fake stores can never share a ts.
 */
let sequence = 0;
let lastSeconds = 0;

export function nextSlackTs(now: number = Date.now()): string {
  const seconds = Math.max(lastSeconds, Math.floor(now / 1000));
  if (seconds !== lastSeconds) {
    lastSeconds = seconds;
    sequence = 0;
  }
  sequence += 1;
  // A busy second overflows into the next one rather than repeating a ts.
  if (sequence > 999_999) {
    lastSeconds += 1;
    sequence = 1;
  }
  return `${lastSeconds}.${String(sequence).padStart(6, '0')}`;
}
