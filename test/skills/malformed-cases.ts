/**
 * The expected verdict for every skill under test/fixtures/skills/malformed/, in one table.
 * Each problem is [line, severity, message]; `loads` says whether the skill is still usable.
 * 'spec' is a warning that breaks a rule the spec requires: the skill loads, `skills lint` fails.
 */

type ExpectedProblem = [line: number, severity: 'error' | 'warning' | 'spec', message: string];

export interface MalformedCase {
  folder: string;
  loads: boolean;
  problems: ExpectedProblem[];
}

const ALLOWED = 'name, description, license, compatibility, metadata, allowed-tools';

/** Names the Agent Skills format rejects, with the reason Countersign gives. */
export const BAD_NAMES: Array<{ name: unknown; message: string }> = [
  { name: 'Name-Uppercase', message: '"name" "Name-Uppercase" has uppercase letters; use "name-uppercase"' },
  { name: '-leading-hyphen', message: '"name" "-leading-hyphen" must not start or end with a hyphen' },
  { name: 'trailing-hyphen-', message: '"name" "trailing-hyphen-" must not start or end with a hyphen' },
  { name: 'double--hyphen', message: '"name" "double--hyphen" must not contain consecutive hyphens (--)' },
  {
    name: 'name_underscore',
    message: '"name" "name_underscore" may only use lowercase letters, digits and hyphens; remove "_"',
  },
  {
    name: 'deploy→prod',
    message: '"name" "deploy→prod" may only use lowercase letters, digits and hyphens; remove "→"',
  },
  {
    name: 'name with space',
    message: '"name" "name with space" may only use lowercase letters, digits and hyphens; remove " "',
  },
  { name: 'МОЙ-НАВЫК', message: '"name" "МОЙ-НАВЫК" has uppercase letters; use "мой-навык"' },
  // NFKC turns the ligature ﬁ into "fi" and the fullwidth Ａ into "A", which is uppercase.
  { name: 'Ａbc', message: '"name" "Ａbc" has uppercase letters; use "abc"' },
  { name: 'e\u0301'.repeat(65), message: '"name" is 65 characters long; the limit is 64' },
  { name: 'a'.repeat(65), message: '"name" is 65 characters long; the limit is 64' },
  { name: '', message: '"name" is empty: use the skill\'s folder name, e.g. name: my-skill' },
  { name: null, message: '"name" is empty: use the skill\'s folder name, e.g. name: my-skill' },
  { name: 42, message: '"name" must be text made of lowercase letters, digits and hyphens, but it is a number' },
  {
    name: 'UPPER_and_under',
    message: '"name" "UPPER_and_under" may only use lowercase letters, digits and hyphens; remove "_"',
  },
  {
    name: 'dots.in.name',
    message: '"name" "dots.in.name" may only use lowercase letters, digits and hyphens; remove "."',
  },
];

/**
 * Names that are fine, including the limits themselves. The spec allows Unicode lowercase letters
 * and digits (the reference validator's own cases: 技能, мой-навык, NFKC-composed café); lengths
 * count characters, not UTF-16 units.
 */
export const GOOD_NAMES = [
  'a',
  'pdf-tools',
  'x1',
  '2fa-reset',
  'a'.repeat(64),
  'a-b-c-d',
  'мой-навык',
  'навык',
  '技能',
  'café-tools',
  'cafe\u0301',
  'ﬁle-tools',
  '𐐨'.repeat(64), // a lowercase letter outside the BMP: 64 characters, 128 UTF-16 units
];

const badName = (name: unknown) => {
  const found = BAD_NAMES.find((b) => b.name === name);
  if (!found) throw new Error(`BAD_NAMES has no entry for ${String(name)}`);
  return found.message;
};

export const MALFORMED_CASES: MalformedCase[] = [
  // The file cannot be read as a skill at all.
  {
    folder: 'empty-file',
    loads: false,
    problems: [
      [1, 'error', 'SKILL.md is empty: it needs a frontmatter block with name and description, then instructions'],
    ],
  },
  {
    folder: 'whitespace-only',
    loads: false,
    problems: [
      [1, 'error', 'SKILL.md is empty: it needs a frontmatter block with name and description, then instructions'],
    ],
  },
  {
    folder: 'binary-skill-file',
    loads: false,
    problems: [[1, 'error', 'SKILL.md is a binary file, not text: it must be UTF-8 Markdown']],
  },
  {
    folder: 'not-utf8',
    loads: false,
    problems: [[1, 'error', 'SKILL.md is not valid UTF-8 text; save it with UTF-8 encoding']],
  },
  {
    folder: 'no-frontmatter',
    loads: false,
    problems: [
      [
        1,
        'error',
        'no frontmatter: SKILL.md must start with a line "---", then name: and description:, then a closing "---"',
      ],
    ],
  },
  {
    folder: 'unterminated-frontmatter',
    loads: false,
    problems: [[1, 'error', 'the frontmatter opened on line 1 is never closed: add a line "---" after the last key']],
  },

  // The YAML does not parse.
  {
    folder: 'yaml-bad-indentation',
    loads: false,
    problems: [[5, 'error', 'invalid YAML: bad indentation of a mapping entry']],
  },
  { folder: 'yaml-duplicate-key', loads: false, problems: [[4, 'error', 'invalid YAML: duplicated mapping key']] },
  {
    folder: 'yaml-unclosed-quote',
    loads: false,
    problems: [[3, 'error', 'invalid YAML: the quoted value that starts on this line is never closed']],
  },
  {
    folder: 'yaml-tab-indentation',
    loads: false,
    problems: [[5, 'error', 'invalid YAML: a tab is used for indentation; indent with spaces']],
  },
  {
    folder: 'yaml-colon-in-description',
    loads: true,
    problems: [
      [
        3,
        'warning',
        'the value of "description" contains ": " and is not quoted, which strict YAML rejects; put it in quotes',
      ],
    ],
  },

  // The YAML parses but is not a map of keys.
  {
    folder: 'frontmatter-is-list',
    loads: false,
    problems: [[2, 'error', 'the frontmatter must be YAML keys (name: …, description: …), but it is a list']],
  },
  {
    folder: 'frontmatter-is-text',
    loads: false,
    problems: [[2, 'error', 'the frontmatter must be YAML keys (name: …, description: …), but it is plain text']],
  },
  {
    folder: 'frontmatter-empty',
    loads: false,
    problems: [
      [1, 'error', 'missing required key "name": add name: frontmatter-empty'],
      [1, 'error', 'missing required key "description": add a description of what the skill does and when to use it'],
    ],
  },

  // name
  {
    folder: 'missing-name',
    loads: false,
    problems: [[1, 'error', 'missing required key "name": add name: missing-name']],
  },
  { folder: 'name-empty', loads: false, problems: [[2, 'error', badName('')]] },
  { folder: 'name-null', loads: false, problems: [[2, 'error', badName(null)]] },
  { folder: 'name-number', loads: false, problems: [[3, 'error', badName(42)]] },
  { folder: 'Name-Uppercase', loads: false, problems: [[2, 'error', badName('Name-Uppercase')]] },
  { folder: '-leading-hyphen', loads: false, problems: [[2, 'error', badName('-leading-hyphen')]] },
  { folder: 'trailing-hyphen-', loads: false, problems: [[2, 'error', badName('trailing-hyphen-')]] },
  { folder: 'double--hyphen', loads: false, problems: [[2, 'error', badName('double--hyphen')]] },
  { folder: 'name_underscore', loads: false, problems: [[2, 'error', badName('name_underscore')]] },
  { folder: 'name-non-ascii', loads: false, problems: [[2, 'error', badName('deploy→prod')]] },
  { folder: 'name-with-space', loads: false, problems: [[2, 'error', badName('name with space')]] },
  // The spec requires these, but the client guide says to warn and load anyway.
  {
    folder: 'name-too-long',
    loads: true,
    problems: [
      [2, 'spec', '"name" is 65 characters long; the limit is 64'],
      [2, 'spec', `"name" "${'a'.repeat(65)}" does not match its folder "name-too-long"; rename one so they are equal`],
    ],
  },
  {
    folder: 'name-folder-mismatch',
    loads: true,
    problems: [
      [
        2,
        'spec',
        '"name" "some-other-name" does not match its folder "name-folder-mismatch"; rename one so they are equal',
      ],
    ],
  },

  // description
  {
    folder: 'missing-description',
    loads: false,
    problems: [
      [1, 'error', 'missing required key "description": add a description of what the skill does and when to use it'],
    ],
  },
  {
    folder: 'description-empty',
    loads: false,
    problems: [[3, 'error', '"description" is empty: say what the skill does and when to use it']],
  },
  {
    folder: 'description-is-list',
    loads: false,
    problems: [[3, 'error', '"description" must be text, but it is a list']],
  },
  {
    folder: 'description-too-long',
    loads: true,
    problems: [
      [
        3,
        'spec',
        '"description" is 1025 characters long; the limit is 1024 — keep it to what and when, and move detail into the body',
      ],
    ],
  },

  // Optional keys and advice: reported, but the skill still loads.
  {
    folder: 'unknown-keys',
    loads: true,
    problems: [
      [
        4,
        'warning',
        `unknown key "version": the Agent Skills format allows ${ALLOWED}; put extra fields under metadata`,
      ],
      [5, 'warning', `unknown key "tags": the Agent Skills format allows ${ALLOWED}; put extra fields under metadata`],
    ],
  },
  {
    folder: 'compatibility-too-long',
    loads: true,
    problems: [[4, 'spec', '"compatibility" is 501 characters long; the limit is 500 (it was ignored)']],
  },
  {
    folder: 'metadata-non-string',
    loads: true,
    problems: [
      [6, 'warning', '"metadata.version" must be text, but it is a number; quote the value (it was ignored)'],
      [7, 'warning', '"metadata.reviewed" must be text, but it is a date; quote the value (it was ignored)'],
      [8, 'warning', '"metadata.stable" must be text, but it is true/false; quote the value (it was ignored)'],
    ],
  },
  {
    folder: 'metadata-not-map',
    loads: true,
    problems: [[4, 'spec', '"metadata" must be a map of names to text values, but it is a list; it was ignored']],
  },
  {
    folder: 'allowed-tools-wrong-type',
    loads: true,
    problems: [
      [4, 'warning', '"allowed-tools" must be a space-separated list of tool names, but it is a map; it was ignored'],
    ],
  },
  {
    folder: 'license-not-string',
    loads: true,
    problems: [[4, 'warning', '"license" must be text, but it is a number; it was ignored']],
  },
  {
    folder: 'body-too-long',
    loads: true,
    problems: [
      [
        505,
        'warning',
        'the instructions are 520 lines long; keep SKILL.md under 500 lines and move detail into referenced files',
      ],
    ],
  },
];
