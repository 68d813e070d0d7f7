/**
 * A link whose text reads like an address is trusted as one: `[https://intranet.example](https://evil.example)`
 * would send a reader somewhere other than where it says. Model output is not trusted to label links
 * honestly, so such a link is shown with its real target beside the text.
 */

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
 * rewrites is never cut between two pieces of a stream (pieces are cut at whitespace).
 */
export function revealDisguisedLinks(markdown: string): string {
  return markdown.replace(/\[([^\]\s]+)\]\(([^)\s]+)\)/g, (whole, label: string, url: string) =>
    disguisesTarget(label, url) ? `${label} (${url})` : whole,
  );
}
