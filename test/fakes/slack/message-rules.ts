/**
 * The Block Kit and message limits Slack enforces on chat.postMessage / chat.update /
 * chat.postEphemeral, written out here independently of `src/adapters/slack/limits.ts` on
 * purpose: the fake checks the adapter, it must not share its numbers. Sources: the Block Kit
 * reference (blocks, block elements, composition objects) and chat.postMessage's `msg_too_long`.
 */
const MAX_BLOCKS = 50;
const MAX_MESSAGE_TEXT = 40_000;
const SECTION_TEXT = 3000;
const SECTION_FIELDS = 10;
const SECTION_FIELD_TEXT = 2000;
const HEADER_TEXT = 150;
const CONTEXT_ELEMENTS = 10;
const ACTIONS_ELEMENTS = 25;
const BUTTON_TEXT = 75;
const BUTTON_VALUE = 2000;
const ACTION_ID = 255;
const BLOCK_ID = 255;

export interface RuleViolation {
  error: 'invalid_blocks' | 'msg_too_long' | 'no_text';
  messages: string[];
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const textOf = (v: unknown): string => (isObject(v) && typeof v.text === 'string' ? v.text : '');

export function checkMessage(text: unknown, blocks: unknown): RuleViolation | undefined {
  const hasText = typeof text === 'string' && text.length > 0;
  const blockList = Array.isArray(blocks) ? blocks : [];
  if (!hasText && blockList.length === 0) return { error: 'no_text', messages: [] };
  if (typeof text === 'string' && text.length > MAX_MESSAGE_TEXT) return { error: 'msg_too_long', messages: [] };
  const messages = checkBlocks(blocks);
  return messages.length ? { error: 'invalid_blocks', messages } : undefined;
}

function checkBlocks(blocks: unknown): string[] {
  if (blocks === undefined) return [];
  if (!Array.isArray(blocks)) return ['[ERROR] must be an array [json-pointer:/blocks]'];
  const problems: string[] = [];
  const fail = (pointer: string, what: string) => problems.push(`[ERROR] ${what} [json-pointer:/blocks${pointer}]`);
  if (blocks.length > MAX_BLOCKS) fail('', `no more than ${MAX_BLOCKS} items allowed`);
  blocks.forEach((block, i) => {
    const at = `/${i}`;
    if (!isObject(block) || typeof block.type !== 'string') return fail(at, 'must be a block object with a type');
    if (typeof block.block_id === 'string' && block.block_id.length > BLOCK_ID)
      fail(`${at}/block_id`, `must be less than ${BLOCK_ID + 1} characters`);
    switch (block.type) {
      case 'section': {
        if (!block.text && !block.fields) fail(at, 'must provide text or fields');
        if (textOf(block.text).length > SECTION_TEXT)
          fail(`${at}/text/text`, `must be less than ${SECTION_TEXT + 1} characters`);
        if (Array.isArray(block.fields)) {
          if (block.fields.length > SECTION_FIELDS)
            fail(`${at}/fields`, `no more than ${SECTION_FIELDS} items allowed`);
          block.fields.forEach((f, j) => {
            if (textOf(f).length > SECTION_FIELD_TEXT)
              fail(`${at}/fields/${j}/text`, `must be less than ${SECTION_FIELD_TEXT + 1} characters`);
          });
        }
        if (block.accessory !== undefined) checkElement(block.accessory, `${at}/accessory`, fail);
        break;
      }
      case 'header':
        if (textOf(block.text).length > HEADER_TEXT)
          fail(`${at}/text/text`, `must be less than ${HEADER_TEXT + 1} characters`);
        break;
      case 'context':
        if (!Array.isArray(block.elements) || block.elements.length === 0)
          fail(`${at}/elements`, 'must provide elements');
        else if (block.elements.length > CONTEXT_ELEMENTS)
          fail(`${at}/elements`, `no more than ${CONTEXT_ELEMENTS} items allowed`);
        break;
      case 'actions':
        if (!Array.isArray(block.elements) || block.elements.length === 0)
          fail(`${at}/elements`, 'must provide elements');
        else {
          if (block.elements.length > ACTIONS_ELEMENTS)
            fail(`${at}/elements`, `no more than ${ACTIONS_ELEMENTS} items allowed`);
          const ids = new Set<string>();
          block.elements.forEach((e, j) => {
            checkElement(e, `${at}/elements/${j}`, fail);
            const id = isObject(e) && typeof e.action_id === 'string' ? e.action_id : undefined;
            if (id !== undefined && ids.has(id))
              fail(`${at}/elements/${j}/action_id`, 'action_id must be unique in a block');
            if (id !== undefined) ids.add(id);
          });
        }
        break;
      case 'context_actions':
        // Feedback buttons and icon buttons, at most 5 (docs.slack.dev reference: context actions block).
        if (!Array.isArray(block.elements) || block.elements.length === 0)
          fail(`${at}/elements`, 'must provide elements');
        else if (block.elements.length > 5) fail(`${at}/elements`, 'no more than 5 items allowed');
        else
          block.elements.forEach((e, j) => {
            if (!isObject(e) || (e.type !== 'feedback_buttons' && e.type !== 'icon_button'))
              return fail(`${at}/elements/${j}/type`, 'must be feedback_buttons or icon_button');
            if (e.type !== 'feedback_buttons') return;
            for (const side of ['positive_button', 'negative_button'] as const) {
              const b = e[side];
              if (!isObject(b) || !textOf(b.text) || typeof b.value !== 'string')
                fail(`${at}/elements/${j}/${side}`, 'must provide text and value');
            }
          });
        break;
      case 'divider':
      case 'rich_text':
      case 'markdown':
      case 'image':
        break;
      default:
        fail(`${at}/type`, `unsupported block type "${block.type}"`);
    }
  });
  return problems;
}

function checkElement(element: unknown, at: string, fail: (pointer: string, what: string) => void): void {
  if (!isObject(element)) return fail(at, 'must be an element object');
  if (typeof element.action_id === 'string' && element.action_id.length > ACTION_ID)
    fail(`${at}/action_id`, `must be less than ${ACTION_ID + 1} characters`);
  if (element.type !== 'button') return;
  const label = textOf(element.text);
  if (!label) fail(`${at}/text`, 'must provide text');
  if (isObject(element.text) && element.text.type !== 'plain_text') fail(`${at}/text/type`, 'must be plain_text');
  if (label.length > BUTTON_TEXT) fail(`${at}/text/text`, `must be less than ${BUTTON_TEXT + 1} characters`);
  if (typeof element.value === 'string' && element.value.length > BUTTON_VALUE)
    fail(`${at}/value`, `must be less than ${BUTTON_VALUE + 1} characters`);
  if (element.style !== undefined && element.style !== 'primary' && element.style !== 'danger')
    fail(`${at}/style`, 'must be primary or danger');
}
