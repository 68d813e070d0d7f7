import { describe, expect, it } from 'vitest';
import {
  fitMrkdwn,
  markdownToMrkdwn,
  mrkdwnPieces,
  neutralizeMarkdownMentions,
  neutralizeMentions,
} from '../../../../src/adapters/slack/format/index.ts';
import { grantListBlocks, replyBlocks } from '../../../../src/adapters/slack/blocks.ts';

const ZWSP = '\u200B';

describe('markdownToMrkdwn', () => {
  const cases: Array<[rule: string, markdown: string, mrkdwn: string]> = [
    ['bold with asterisks', 'a **b** c', 'a *b* c'],
    ['bold with underscores', 'a __b__ c', 'a *b* c'],
    ['italic with one asterisk', 'a *b* c', 'a _b_ c'],
    ['italic with underscores stays', 'a _b_ c', 'a _b_ c'],
    ['bold italic', '***both***', '*_both_*'],
    ['strikethrough', '~~gone~~', '~gone~'],
    ['snake_case is not italic', 'run my_script_name now', 'run my_script_name now'],
    ['a lone asterisk is literal', '2 * 3 = 6', '2 * 3 = 6'],
    ['link', 'see [the docs](https://example.com/a?b=1)', 'see <https://example.com/a?b=1|the docs>'],
    ['link with & in the URL', '[q](https://x.io/?a=1&b=2)', '<https://x.io/?a=1&amp;b=2|q>'],
    ['link with | in the URL', '[p](https://x.io/a|b)', '<https://x.io/a%7Cb|p>'],
    ['link label keeps no markup', '[**big**](https://x.io)', '<https://x.io|big>'],
    ['image becomes a link', '![graph](https://x.io/g.png)', '<https://x.io/g.png|graph>'],
    ['autolink', 'go to <https://x.io>', 'go to <https://x.io>'],
    ['javascript: links are not links', '[x](javascript:alert(1))', '[x](javascript:alert(1))'],
    ['heading', '## Disk usage', '*Disk usage*'],
    ['heading with bold inside', '# The **real** cause', '*The real cause*'],
    ['heading with closing hashes', '### Done ###', '*Done*'],
    ['dash bullet', '- one', '• one'],
    ['star bullet', '* one', '• one'],
    ['nested bullet keeps indent', '  - two', '  • two'],
    ['ordered list unchanged', '1. first', '1. first'],
    ['blockquote', '> quoted **text**', '> quoted *text*'],
    ['nested blockquote flattens', '>> deep', '> deep'],
    ['thematic break', '---', '──────────'],
    ['escapes & < >', 'a < b && c > d', 'a &lt; b &amp;&amp; c &gt; d'],
    ['escapes an HTML tag', '<script>x</script>', '&lt;script&gt;x&lt;/script&gt;'],
    ['code span unstyled, only escaped', 'run `a **b** <c> & d`', 'run `a **b** &lt;c&gt; &amp; d`'],
    ['double-backtick code span', '``a ` b``', '``a ` b``'],
    ['a backtick run with no run of its length is literal', '``a` **b**', '``a` *b*'],
    [
      'fenced block unstyled, only escaped, language dropped',
      '```sh\necho **x** <y> & z\n```',
      '```\necho **x** &lt;y&gt; &amp; z\n```',
    ],
    ["generics in a code span survive Slack's <…> parsing", '`map<string,string>`', '`map&lt;string,string&gt;`'],
    ['tilde fence', '~~~\n~~not strike~~\n~~~', '```\n~~not strike~~\n```'],
    ['unclosed fence runs to the end', '```\n# not a heading', '```\n# not a heading\n```'],
    ['text after a fence is converted again', '```\nx\n```\n**y**', '```\nx\n```\n*y*'],
    ['backslash escapes', '\\*not italic\\*', '*not italic*'],
    ['CRLF line endings', '**a**\r\n- b', '*a*\n• b'],
  ];
  it.each(cases)('%s', (_rule, markdown, mrkdwn) => {
    expect(markdownToMrkdwn(markdown)).toBe(mrkdwn);
  });

  it('never lets model text form a broadcast or user mention outside code', () => {
    const out = markdownToMrkdwn('Hi <!channel> <!here> <@U123ABC> <!subteam^S1|@ops>');
    expect(out).not.toMatch(/<[!@]/);
  });

  it('shows mention tokens inside code literally, escaped, never as mentions', () => {
    expect(markdownToMrkdwn('`<!here>`')).toBe('`&lt;!here&gt;`');
    expect(markdownToMrkdwn('```\n<@U999>\n@channel\n```')).toBe(`\`\`\`\n&lt;@U999&gt;\n@${ZWSP}channel\n\`\`\``);
  });

  it('keeps a mention of an allowed user', () => {
    expect(markdownToMrkdwn('done, <@U0ALICE001>', { allowedUserIds: ['U0ALICE001'] })).toBe('done, <@U0ALICE001>');
  });

  it('strips private-use characters it uses internally from the input', () => {
    expect(markdownToMrkdwn('a\uE0000\uE000b')).toBe('a0b');
  });
});

describe('neutralizeMentions', () => {
  const cases: Array<[what: string, text: string, safe: string]> = [
    ['<!channel>', 'hey <!channel>', `hey @${ZWSP}channel`],
    ['<!here>', '<!here> now', `@${ZWSP}here now`],
    ['<!everyone>', '<!everyone>', `@${ZWSP}everyone`],
    ['<!here> with a label', '<!here|here>', `@${ZWSP}here`],
    ['user group with a handle', '<!subteam^S0123ABC|@oncall>', `@${ZWSP}oncall`],
    ['user group without a handle', '<!subteam^S0123ABC>', `@${ZWSP}subteam`],
    ['a user not allowed', 'ask <@U0BOB0001>', `ask @${ZWSP}U0BOB0001`],
    ['an enterprise user (W…)', '<@W0ENT0001>', `@${ZWSP}W0ENT0001`],
    ['a user mention with a label', '<@U0BOB0001|bob>', `@${ZWSP}bob`],
    ['bare @channel', 'ping @channel please', `ping @${ZWSP}channel please`],
    ['bare @here at the start', '@here look', `@${ZWSP}here look`],
    ['bare @everyone, any case', 'hi @Everyone', `hi @${ZWSP}Everyone`],
    ['an email address is untouched', 'mail ops@here.com', 'mail ops@here.com'],
    ['@herein is not @here', '@herein', '@herein'],
    ['a channel link is untouched', 'see <#C0OPS00001>', 'see <#C0OPS00001>'],
    ['a date token is untouched', '<!date^1700000000^{date}|Nov 14>', '<!date^1700000000^{date}|Nov 14>'],
  ];
  it.each(cases)('makes %s harmless', (_what, text, safe) => {
    expect(neutralizeMentions(text)).toBe(safe);
  });

  it('keeps mentions of allowed users and only those', () => {
    expect(neutralizeMentions('<@U0ALICE001> and <@U0BOB0001>', { allowedUserIds: ['U0ALICE001'] })).toBe(
      `<@U0ALICE001> and @${ZWSP}U0BOB0001`,
    );
  });

  it('never lets an allowed user id unlock a broadcast', () => {
    expect(neutralizeMentions('<!channel>', { allowedUserIds: ['channel', '!channel'] })).toBe(`@${ZWSP}channel`);
  });
});

describe('cutting to a Slack limit: the Markdown is cut, then converted', () => {
  /** An entity cut short (`&am`), or a `<` without its `>`: what cutting converted text leaves. */
  const broken = (mrkdwn: string) =>
    /&(?!amp;|lt;|gt;)/.test(mrkdwn) || (mrkdwn.match(/</g) ?? []).length !== (mrkdwn.match(/>/g) ?? []).length;
  const long = `${'a < b && c, '.repeat(40)}[the docs](https://example.com/${'p'.repeat(40)}) `.repeat(30);

  it('fitMrkdwn keeps whole entities and links, within the limit, and says it cut', () => {
    for (const max of [997, 1000, 1003, 2999, 3000]) {
      const fitted = fitMrkdwn(long, max);
      expect(fitted.length).toBeLessThanOrEqual(max);
      expect(fitted.length).toBeGreaterThan(max * 0.8);
      expect(fitted.endsWith('…')).toBe(true);
      expect(broken(fitted), `cut at ${max}`).toBe(false);
    }
    expect(fitMrkdwn('**short**', 10)).toBe('*short*');
  });

  it('mrkdwnPieces covers the whole text in pieces that each fit, reopening a cut code block', () => {
    const pieces = mrkdwnPieces(long, 3000);
    expect(pieces.length).toBeGreaterThan(5);
    for (const piece of pieces) {
      expect(piece.length).toBeLessThanOrEqual(3000);
      expect(broken(piece)).toBe(false);
    }
    expect(pieces.join('').replaceAll(/\s/g, '')).toBe(markdownToMrkdwn(long).replaceAll(/\s/g, ''));
    const code = mrkdwnPieces(`\`\`\`\n${'x & y\n'.repeat(1000)}\`\`\``, 3000);
    expect(code.length).toBeGreaterThan(1);
    for (const piece of code) expect(piece.startsWith('```\n') && piece.endsWith('\n```')).toBe(true);
  });

  it('replyBlocks and a /countersign grants line never show half an entity or link', () => {
    const sections = replyBlocks(long).flatMap((b) => (b.type === 'section' && b.text ? [b.text.text] : []));
    expect(sections.length).toBeGreaterThan(1);
    for (const text of sections) expect(broken(text)).toBe(false);
    const [, grant] = grantListBlocks([{ id: 'g1', text: long }], 1);
    const text = grant?.type === 'section' ? (grant.text?.text ?? '') : '';
    expect(text.length).toBeLessThanOrEqual(3000);
    expect(text.endsWith('…')).toBe(true);
    expect(broken(text)).toBe(false);
  });
});

describe('neutralizeMarkdownMentions', () => {
  it('reveals a disguised link behind a stray [ (the link a renderer shows is the inner one)', () => {
    expect(neutralizeMarkdownMentions('[[a.example](https://b.example)')).toBe('[a.example (https://b.example)');
  });
});
