/**
 * A link whose text reads like an address is trusted as one: `[https://intranet.example](https://evil.example)`
 * would send a reader somewhere other than where it says. Model output is not trusted to label links
 * honestly, so such a link is shown with its real target beside the text.
 */
import { isSpace, nearestFrom } from './scan.ts';

/** A label that reads as a web address: an optional scheme, a dotted host, an optional path. */
const ADDRESS_LIKE = /^(?:[a-z][a-z0-9+.-]*:\/\/)?((?:[a-z0-9-]+\.)+[a-z]{2,})(?::\d+)?(?:[/?#]\S*)?$/i;

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname.toLowerCase().replace(/^www\./, '');
  } catch {
    return undefined;
  }
}

/** Whether `label` names an address other than `url`'s host (the same host, any path, is honest). */
export function disguisesTarget(label: string, url: string): boolean {
  const match = ADDRESS_LIKE.exec(label.trim());
  if (!match) return false;
  const shown = match[1]!.toLowerCase().replace(/^www\./, '');
  return shown !== hostOf(url);
}

/**
 * For Markdown sent to Slack's streaming methods: `[label](url)` whose label disguises its target
 * becomes `label (url)`. Only labels without whitespace can read as an address, so a link this
 * rewrites is never cut between two pieces of a stream (pieces are cut at whitespace). A label holds
 * no `[` either: in `[[a.example](…)` the link is the inner one, as a Markdown renderer shows it.
 * Linear: the label's and the URL's ends are read from tables, not searched for from every `[`.
 */
export function revealDisguisedLinks(markdown: string): string {
  if (!markdown.includes('](')) return markdown;
  const n = markdown.length;
  const labelEnd = nearestFrom(n, (i) => markdown[i] === ']' || markdown[i] === '[' || isSpace(markdown[i]));
  const urlEnd = nearestFrom(n, (i) => markdown[i] === ')' || isSpace(markdown[i]));
  let out = '';
  let from = 0;
  for (let open = markdown.indexOf('['); open >= 0; open = markdown.indexOf('[', open + 1)) {
    const close = labelEnd[open + 1]!;
    if (close === open + 1 || markdown[close] !== ']' || markdown[close + 1] !== '(') continue;
    const end = urlEnd[close + 2]!;
    if (end === close + 2 || markdown[end] !== ')') continue;
    const label = markdown.slice(open + 1, close);
    const url = markdown.slice(close + 2, end);
    if (disguisesTarget(label, url)) out += `${markdown.slice(from, open)}${label} (${url})`;
    else out += markdown.slice(from, end + 1);
    from = end + 1;
    open = end;
  }
  return out + markdown.slice(from);
}
