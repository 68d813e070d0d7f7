import path from 'node:path';
import { INSTALL_DIR, type Config } from '../config.ts';

export interface SkillDirs {
  /** Skills that ship with Countersign: SKILLS_DIR, relative to the install directory. */
  shippedDir: string;
  /** Skills people add: CUSTOM_SKILLS_DIR, relative to the agent workspace. */
  customDir: string;
}

type SkillDirConfig = Pick<Config, 'SKILLS_DIR' | 'CUSTOM_SKILLS_DIR' | 'AGENT_WORKSPACE_ROOT'>;

export function skillDirs(config: SkillDirConfig, cwd: string = process.cwd()): SkillDirs {
  const workspace = path.resolve(cwd, config.AGENT_WORKSPACE_ROOT);
  return {
    shippedDir: path.resolve(INSTALL_DIR, config.SKILLS_DIR),
    customDir: path.resolve(workspace, config.CUSTOM_SKILLS_DIR),
  };
}
