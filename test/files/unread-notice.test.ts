import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { CSV } from './samples.ts';

/** A file that could not be read is news for the person, whatever the model makes of its note. */
describe('files not read', () => {
  let h: Harness;
  beforeAll(async () => {
    // The model's answer never mentions the files: only the notice can tell the person.
    h = await startHarness({ script: { rules: [{ rounds: [{ text: 'Done.' }] }] }, env: { MAX_FILE_BYTES: '1000' } });
  });
  afterAll(() => h.stop());

  it('tells the person which file was too large and which could not be fetched, and why', async () => {
    h.outbound.files.set('F-big', Buffer.alloc(5000, 'a'));
    h.outbound.files.set('F-gone', new Error('no such file'));
    h.outbound.files.set('F-csv', Buffer.from(CSV));
    const item = await h.say('unread-1', 'sum these', {
      input: {
        prompt: 'sum these',
        files: [
          { id: 'F-big', name: 'big.log', size: 5000 },
          { id: 'F-gone', name: 'missing.log' },
          { id: 'F-csv', name: 'data.csv', size: CSV.length },
        ],
      },
    });
    expect((await h.settled(item.id)).result?.text).toBe('Done.');
    const [notice, ...rest] = h.outbound.channelText('unread-1');
    expect(notice).toBe(
      'I could not read these files:\n' +
        '- "big.log": it is 5000 bytes; the limit is 1000 bytes (MAX_FILE_BYTES)\n' +
        '- "missing.log": the download failed: no such file',
    );
    expect(rest.join('\n')).toContain('Done.');
  });

  it('says nothing more when every file was read', async () => {
    h.outbound.files.set('F-csv2', Buffer.from(CSV));
    const item = await h.say('unread-2', 'sum it', {
      input: { prompt: 'sum it', files: [{ id: 'F-csv2', name: 'data.csv', size: CSV.length }] },
    });
    await h.settled(item.id);
    expect(h.outbound.channelText('unread-2').join('\n')).not.toContain('could not read');
  });
});
