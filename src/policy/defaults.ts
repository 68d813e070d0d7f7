import { compileNameGlob, compilePathGlob } from './glob.ts';
import type { CompiledRule, DecideInput, PolicyParts } from './engine.ts';
import { Policy } from './engine.ts';
import { parsePerson, type PersonPattern } from './person.ts';
import { groupPrefixes, type PolicyPlatforms } from './platforms.ts';
import type { Outcome, Risk, ToolKind } from './schema.ts';

/** What the deployment tells the engine; every field but `platforms` has a default. */
export interface PolicyOptions {
  /** The platforms a policy may name: their id shapes, whose ids are workspace-scoped, who is a guest. */
  platforms: PolicyPlatforms;
  /** APPROVERS, as written there (`slack:U…`, `discord:…`); bad entries are skipped (config reports them). */
  approvers?: readonly string[];
  /**
   * APPROVAL_TWO_PERSON_RULE (default true): high-risk calls need an approver other than the
   * requester when approvers are configured. False: the requester may approve them too.
   */
  twoPersonRule?: boolean;
  /** CUSTOM_SKILLS_DIR, relative to the workspace (default `skills`). */
  customSkillsDir?: string;
  /**
   * More workspace-relative paths or globs that change the agent when written: the policy file and
   * MCP_CONFIG when they live inside the workspace.
   */
  protectedPaths?: readonly string[];
}

/**
 * Workspace paths whose writes can later run code or change the agent, so a self-approved write
 * would launder a risky action: scripts and build files, the custom skills folder, and dotfiles and
 * dot-folders (`.gitconfig`, `.bashrc`, `.npmrc`, `.env`, `.git/hooks/…`, `.github/workflows/…`).
 */
const AGENT_CHANGING_PATHS = [
  '**/*.{sh,bash,zsh,fish,ps1,bat,cmd}',
  '**/*.{py,js,mjs,cjs,ts,mts,cts,jsx,tsx,rb,pl,php,lua}',
  '**/{bin,tools,scripts,hooks}/**',
  '**/{Makefile,makefile,GNUmakefile,*.mk,Justfile,justfile,Taskfile.yml,Taskfile.yaml,Rakefile}',
  '**/{package.json,pyproject.toml,setup.py,setup.cfg,Dockerfile,docker-compose.yml,compose.yaml}',
  // Build inputs whose content a build, a test run or a package manager executes.
  '**/{go.mod,go.work,build.rs,Cargo.toml,pom.xml,build.gradle,build.gradle.kts,settings.gradle,settings.gradle.kts}',
  '**/{gradlew,Gemfile,*.gemspec,CMakeLists.txt,*.cmake,meson.build,tox.ini,noxfile.py,BUILD,BUILD.bazel}',
  '**/{WORKSPACE,WORKSPACE.bazel,MODULE.bazel,*.bzl,Directory.Build.props,Directory.Build.targets,*.csproj}',
  '**/*_test.go',
  // Git metadata: HEAD is what makes a folder a repository, so no repository appears without it.
  '**/{HEAD,packed-refs}',
  '**/.*',
  '**/.*/**',
] as const;

/**
 * Names of files whose content is a secret: environment files, private keys and keystores, cloud and
 * package-manager credentials. Sharing one posts it where everyone in the conversation can read it.
 */
const SECRET_LOOKING_PATHS = [
  '**/.env',
  '**/.env.*',
  '**/*.env',
  '**/*.{pem,key,p12,pfx,jks,keystore,kdbx,asc,gpg,ppk}',
  '**/id_{rsa,dsa,ecdsa,ed25519}',
  // Paths compare case-insensitively: `AWS_Credentials.csv` too.
  '**/*{credential,secret,token,password}*',
  '**/{.npmrc,.pypirc,.netrc,.pgpass,.htpasswd,.git-credentials,.dockercfg,kubeconfig}',
  '**/{.ssh,.aws,.gnupg,.kube,.docker}/**',
  '**/.config/gcloud/**',
] as const;

const BUILT_IN = 'built-in';

/** How many changed files a card names before it counts the rest. */
const CHANGED_FILES_SHOWN = 40;

/** The card's reason for a countersignature on a run in a changed workspace. */
function changedFilesNote(files: readonly string[]): string {
  const shown = files.slice(0, CHANGED_FILES_SHOWN).join(', ');
  const more = files.length > CHANGED_FILES_SHOWN ? ` and ${files.length - CHANGED_FILES_SHOWN} more` : '';
  return `files changed since the last countersigned run: ${shown}${more}`;
}

function builtin(
  name: string,
  outcome: Outcome,
  risk: Risk,
  when: Partial<Pick<CompiledRule, 'kinds' | 'mcp' | 'paths' | 'pathMatch' | 'test'>> & { tools?: string[] },
): CompiledRule {
  const { tools = ['*'], ...rest } = when;
  return {
    ref: { name: `default:${name}`, source: BUILT_IN },
    tools: tools.map(compileNameGlob),
    ...rest,
    outcome,
    risk,
    grantable: outcome === 'ask',
  };
}

const kinds = (...k: ToolKind[]) => ({ kinds: k });

/**
 * APPROVERS as patterns. Entries of a platform the policy has no id rules for (one an embedding
 * application adds without describing it, `platform:id`) name that account as written; config.ts
 * validated the rest.
 */
export function approverPatterns(entries: readonly string[], platforms: PolicyPlatforms): PersonPattern[] {
  const prefixes = groupPrefixes(platforms);
  return entries.flatMap((entry) => {
    const parsed = parsePerson(entry.trim(), platforms);
    if (parsed.ok) return [parsed.pattern];
    const other = /^([a-z][a-z0-9-]*):([^\s:]+)$/.exec(entry.trim());
    const name = other?.[1] ?? '';
    if (other && !platforms.has(name) && !prefixes.has(name) && !name.includes('-'))
      return [{ kind: 'user' as const, platform: name, user: other[2]! }];
    return [];
  });
}

/**
 * The built-in rules, tried after a file's. High-risk calls need a countersignature when anyone can
 * give one (approvers are configured), and otherwise ask, so a single person alone still gets work
 * done — with a card in front of every risky call.
 */
export function builtinRules(
  haveApprovers: boolean,
  options: Omit<PolicyOptions, 'platforms'> = {},
): Pick<PolicyParts, 'fallback' | 'floors' | 'taint'> {
  const high: Outcome = haveApprovers && options.twoPersonRule !== false ? 'countersign' : 'ask';
  const skills = (options.customSkillsDir ?? 'skills').replace(/^\.\/|\/+$/g, '') || 'skills';
  // The folder itself too: `skills/**` does not name `skills`, which a delete could take whole.
  const guarded = [skills, `${skills}/**`, ...AGENT_CHANGING_PATHS, ...(options.protectedPaths ?? [])];
  const notReadOnly = ({ tool }: DecideInput) => tool.mcp?.readOnlyHint !== true;
  const floors: CompiledRule[] = [
    builtin('agent-changing-write', high, 'high', {
      kinds: ['write', 'delete', 'mcp', 'exec'],
      paths: guarded.map(compilePathGlob),
      pathMatch: 'any',
      // A read-only MCP tool that names a path reads it.
      test: notReadOnly,
    }),
    builtin('git-metadata-write', high, 'high', {
      kinds: ['write', 'delete', 'mcp', 'exec'],
      test: (input) => notReadOnly(input) && input.facts?.gitMetadata === true,
    }),
    // Sharing a file that looks like a secret posts it to everyone in the conversation: a second
    // person signs whenever one can (even alone, a card), and never under a standing grant.
    {
      ...builtin('share-secret', haveApprovers ? 'countersign' : 'ask', 'high', {
        kinds: ['share'],
        paths: SECRET_LOOKING_PATHS.map(compilePathGlob),
        pathMatch: 'any',
      }),
      grantable: false,
    },
    // The same for a file whatever its name, when its content looks like a key or a token.
    {
      ...builtin('share-secret-content', haveApprovers ? 'countersign' : 'ask', 'high', {
        kinds: ['share'],
        test: ({ facts }) => facts?.secretContent !== undefined,
      }),
      grantable: false,
      explain: ({ facts }) => `its content looks like it holds ${facts?.secretContent ?? 'a secret'}`,
    },
  ];
  // Only where a second person can sign: a program about to run in a workspace that someone changed
  // on their own click needs that second person, who is told which files changed.
  const taint: CompiledRule | undefined =
    high === 'countersign'
      ? {
          ...builtin('tainted-workspace', 'countersign', 'high', {
            test: ({ facts }) => (facts?.changedFiles?.length ?? 0) > 0,
          }),
          grantable: false,
          explain: ({ facts }) => changedFilesNote(facts?.changedFiles ?? []),
        }
      : undefined;
  const fallback: CompiledRule[] = [
    // The agent's own question to a person always makes a card; its answer is the decision.
    builtin('question', 'ask', 'low', kinds('question')),
    builtin('mcp-config-never', 'allow', 'medium', {
      ...kinds('mcp'),
      test: ({ tool }) => tool.mcp?.override === 'never',
    }),
    builtin('mcp-config-always', 'ask', 'low', {
      ...kinds('mcp'),
      mcp: { readOnly: true, trusted: true },
      test: ({ tool }) => tool.mcp?.override === 'always',
    }),
    builtin('read', 'allow', 'low', kinds('read')),
    builtin('mcp-read', 'allow', 'low', { ...kinds('mcp'), mcp: { readOnly: true, trusted: true } }),
    // A remote server's claim to be read-only is its own word, not the operator's.
    builtin('mcp-read-untrusted', high, 'high', { ...kinds('mcp'), mcp: { readOnly: true, trusted: false } }),
    builtin('mcp-destructive', high, 'high', {
      ...kinds('mcp'),
      mcp: { destructive: true },
      test: ({ tool }) => tool.mcp?.destructiveHint === true,
    }),
    // No hints at all: per the MCP spec the tool may be destructive.
    builtin('mcp-unannotated', high, 'high', { ...kinds('mcp'), mcp: { destructive: true } }),
    builtin('mcp-write', 'ask', 'medium', kinds('mcp')),
    // Landing a change on a repository's base branch (docs/code-work.md): whenever anyone can
    // countersign, someone other than the requester must, whatever the two-person rule says of
    // other calls; never a standing grant — every merge is its own decision.
    {
      ...builtin('merge', haveApprovers ? 'countersign' : 'ask', 'high', kinds('merge')),
      grantable: false,
    },
    // Making a schedule (docs/schedules.md): the requester sees WHEN, the next runs and the task on a
    // card before it exists; never a standing grant — each schedule is work done later, unwatched.
    { ...builtin('schedule', 'ask', 'medium', kinds('schedule')), grantable: false },
    builtin('exec', high, 'high', kinds('exec')),
    builtin('delete', high, 'high', kinds('delete')),
    builtin('write', 'ask', 'medium', kinds('write')),
    // Sharing a file is a disclosure: the card shows what would be posted.
    builtin('share', 'ask', 'medium', kinds('share')),
    builtin('unknown', high, 'high', {}),
  ];
  return { fallback, floors, ...(taint ? { taint } : {}) };
}

/** The policy in force without a policy file: the built-in rules alone, everyone may use the bot. */
export function builtinPolicy(options: PolicyOptions): Policy {
  const defaultApprovers = approverPatterns(options.approvers ?? [], options.platforms);
  return new Policy({
    source: BUILT_IN,
    platforms: options.platforms,
    home: [],
    defaultApprovers,
    rules: [],
    ...builtinRules(defaultApprovers.length > 0, options),
  });
}
