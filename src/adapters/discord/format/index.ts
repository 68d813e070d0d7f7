export { neutralizeMentions } from './mentions.ts';
export { splitForDiscord, toDiscordMessages } from './split.ts';
