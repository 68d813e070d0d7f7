/** Edit distance between two short strings (skill names), for "did you mean" hints. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The known name closest to what was typed, if any is close enough to be a plausible typo:
 * within a third of the name's length in edits, or one name containing the other.
 */
export function closestName(typed: string, names: readonly string[]): string | undefined {
  const wanted = typed.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    const distance = editDistance(wanted, name);
    const plausible =
      distance <= Math.max(1, Math.floor(name.length / 3)) ||
      (wanted.length >= 3 && (name.includes(wanted) || wanted.includes(name)));
    if (plausible && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}
