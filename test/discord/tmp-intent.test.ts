import { it } from 'vitest';
import { Client, GatewayIntentBits, Partials } from 'discord.js';
import { FakeDiscord } from '../fakes/discord/index.ts';
it('probe', async () => {
  const fake = await FakeDiscord.start({ disallowedIntents: 1 << 15 });
  const client = new Client({ intents: [GatewayIntentBits.Guilds, GatewayIntentBits.MessageContent], partials: [Partials.Channel], ...fake.clientOptions() });
  client.on('error', (e) => console.log('client error', e));
  const t0 = Date.now();
  try { await client.login(fake.token); console.log('logged in'); } catch (e) { console.log('login failed', Date.now()-t0, (e as any)?.constructor?.name, (e as any)?.code, String(e)); }
  await client.destroy();
  await fake.close();
}, 30000);
