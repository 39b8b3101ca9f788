/**
 * Agent connections (`/api/admin/agents*`, README "Connect agents in one click"): the shapes the
 * dashboard's Connect panel, the tray and the CLI share.
 */

/** A setting Burnrate owns in an agent's config file, as it reads now. */
export interface AgentSettingState {
  /** The file, with `~` for the home folder. */
  file: string
  /** Dotted key inside it, e.g. `env.ANTHROPIC_BASE_URL`. */
  key: string
  /** Its current value, or null when it is not set. */
  value: string | null
}

export interface AgentConnection {
  /** `claude-code`, `codex`, `gemini-cli`, `opencode` or `sdk`. */
  agent: string
  name: string
  installed: boolean
  /** Why it cannot be connected here (null when it can). */
  unsupported: string | null
  /** Burnrate connected it (and has a backup to restore on disconnect). */
  connected: boolean
  /** The Burnrate address it was connected to (null when not connected). */
  url: string | null
  /** Connected, but one of the settings no longer holds what Burnrate wrote (changed by hand), or the agent now reads a file Burnrate did not edit, which does not point at it (connect again). */
  changed_since: boolean
  settings: AgentSettingState[]
  /** A file that cannot be read or parsed, said plainly (null when all are fine). */
  error: string | null
  note: string
  /**
   * Connected, but its calls go around Burnrate all the same, each said plainly (e.g. Codex's
   * config.toml choosing a model provider of its own, which openai_base_url does not move); empty
   * when there is nothing to say, and for an agent not connected (its connect plan's `notes` say it).
   */
  warnings: string[]
  /** Its last call through the proxy, and the last one read from its logs (ISO, or null). */
  last_call_at: string | null
  last_import_at: string | null
}

export interface PlannedFileChange {
  file: string
  /** The file is created, or removed (it did not exist before Burnrate created it). */
  create: boolean
  remove: boolean
  /** A unified diff of the change. */
  diff: string
  settings: { key: string; from: string | null; to: string | null }[]
}

/** Exactly what a connect or disconnect will write; `id` names the files' current contents. */
export interface ConnectPlan {
  id: string
  agent: string
  action: 'connect' | 'disconnect'
  url: string | null
  /** Nothing to write (already connected to this address, or not connected). */
  noop: boolean
  changes: PlannedFileChange[]
  /** What is left alone and why (e.g. a setting the user changed since). */
  notes: string[]
}
