/**
 * pino's JSON lines made readable for a person at a terminal: one line each, `12:04:31 WARN  message
 * key=value …`, an error as its type and message (its stack stays in the JSON a file or a collector
 * gets). Small on purpose: pino-pretty would add a dependency and a worker thread for this.
 */

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** Keys every line has, shown in the line's head or not at all. */
const HEAD_KEYS = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname']);

function shown(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/** An error as pino serialises it: `Type: message`, one line, its causes too. */
function errorText(err: unknown): string {
  if (typeof err !== 'object' || err === null) return shown(err);
  const { type, message, code } = err as { type?: unknown; message?: unknown; code?: unknown };
  const text = `${typeof type === 'string' && type !== 'Error' ? `${type}: ` : ''}${String(message ?? '')}`;
  return JSON.stringify(`${text}${typeof code === 'string' ? ` (${code})` : ''}`.replace(/\s*\n\s*/g, ' '));
}

/** One pino JSON line as one readable line (a line that is not JSON is passed on as it is). */
export function readableLogLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.trimEnd();
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 19) : '';
  const level = (LEVELS[Number(entry.level)] ?? String(entry.level)).padEnd(5);
  const fields = Object.entries(entry)
    .filter(([key]) => !HEAD_KEYS.has(key))
    .map(([key, value]) => `${key}=${key === 'err' || key === 'error' ? errorText(value) : shown(value)}`);
  const message = String(entry.msg ?? '').replace(/\s*\n\s*/g, ' ');
  return [time, level, message, ...fields].filter(Boolean).join(' ');
}

/** A pino destination that writes each line readable to `out` (stderr at a terminal). */
export function readableDestination(out: { write(text: string): unknown }): { write(line: string): void } {
  return { write: (line) => void out.write(`${readableLogLine(line)}\n`) };
}
