import { describe, expect, it } from 'vitest';
import { markdownToMrkdwn, neutralizeMentions } from '../../src/adapters/slack/format/index.ts';

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
