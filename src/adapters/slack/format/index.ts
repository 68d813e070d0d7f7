export { markdownToMrkdwn } from './mrkdwn.ts';
export { neutralizeMarkdownMentions, neutralizeMentions } from './mentions.ts';
export { fitMrkdwn, mrkdwnPieces } from './fit.ts';
