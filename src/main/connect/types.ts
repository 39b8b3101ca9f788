import type { ConfigDoc, FileFormat, KeyPath } from './formats/types'

/** Where the agents' config lives: the user's home, environment and platform (a temporary home in tests). */
export interface ConnectContext {
  home: string
  env: NodeJS.ProcessEnv
  platform: NodeJS.Platform
}

/** One setting an agent needs, in one of its files. */
export interface AgentSetting {
  key: KeyPath
  value: string
}

export interface AgentFile {
  path: string
  format: FileFormat
  settings: AgentSetting[]
  /** Where this file holds the agent's environment variables (Claude Code's `env`; `[]`: the file is an env file), when it does. */
  env?: KeyPath
}

/**
 * One agent Burnrate can point at itself by editing its own config (one file per agent in
 * ./agents, listed in ./registry.ts).
 */
export interface AgentConnector {
  /** `claude-code`, `codex`, `gemini-cli`, `opencode`, `sdk`. */
  id: string
  name: string
  /** The agent names the ledger records for its calls (for "last call seen"). */
  recordedAs: readonly string[]
  /** Whether it looks installed (its config folder or its command on PATH). */
  installed(ctx: ConnectContext): boolean
  /**
   * The files and settings that point it at the Burnrate at `url` (`http://127.0.0.1:8787`);
   * `recorded`: the files Burnrate's record of its connection names, where one was made.
   */
  files(ctx: ConnectContext, url: string, recorded?: readonly string[]): AgentFile[]
  /** Said beside it in the app and the CLI (e.g. what to restart). */
  note: string
  /**
   * The format of a file Burnrate edited for it at `path` that it no longer reads (another login
   * shell's profile): that file is undone in the syntax it was written in. Absent: the format of
   * its current file (every file the agent may read has the same one).
   */
  formatOf?(path: string): FileFormat
  /**
   * Why its calls would not go through Burnrate although `f` holds what Burnrate wrote (Codex's
   * config choosing a model provider the key does not move), or null: said in the plan's notes
   * and, once connected, in the agent's `warnings`.
   */
  bypassNote?(ctx: ConnectContext, f: AgentFile, doc: ConfigDoc, url: string): string | null
  /** Why it cannot be connected on this platform, or null. */
  unsupported?(ctx: ConnectContext): string | null
}
