export { escapeMrkdwn, markdownToMrkdwn } from './mrkdwn.ts';
export { neutralizeMarkdownMentions, neutralizeMentions, type MentionPolicy } from './mentions.ts';
export { fitMrkdwn, mrkdwnPieces } from './fit.ts';
