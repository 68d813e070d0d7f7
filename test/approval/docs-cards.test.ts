import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cardText } from '../../src/approval/card.ts';
import { approvalCardPages } from '../../src/adapters/slack/blocks.ts';
import { EXAMPLE_CARD, EXAMPLE_STATES } from '../fixtures/cards/example.ts';

const doc = readFileSync(path.resolve(import.meta.dirname, '../../docs/approvals.md'), 'utf8');

describe('docs/approvals.md card states', () => {
  it.each(EXAMPLE_STATES)('shows the %s card as the builders draw it', (name, card) => {
    const text = cardText(card);
    const shown = name.startsWith('pending') ? text : text.split('\n').slice(-2).join('\n');
    // Whatever fence the formatter chose (``` or ````, ~~~), the block under the state's name.
    const block = new RegExp(`\\*\\*${name}\\*\\*\\n\\n(\`{3,}|~{3,})text\\n([\\s\\S]*?)\\n\\1\\n`).exec(doc);
    expect(block?.[2]).toBe(shown);
  });

  it('shows the pending card as Slack Block Kit', () => {
    expect(doc).toContain(`\`\`\`json\n${JSON.stringify(approvalCardPages(EXAMPLE_CARD)[0], null, 2)}\n\`\`\``);
  });
});
