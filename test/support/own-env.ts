/**
 * The environment variables that lead Burnrate (connect, import, the log watcher, its config and
 * data folder) to the developer's own files or their own running Burnrate: a test never sees them.
 */
export const OWN_ENV = [
  'CODEX_HOME',
  'CLAUDE_CONFIG_DIR',
  'GEMINI_CLI_HOME',
  'ZDOTDIR',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
  'XDG_STATE_HOME',
  'APPDATA',
  'LOCALAPPDATA',
  'BURNRATE_CONFIG',
  'BURNRATE_DATA_DIR',
  'BURNRATE_DATABASE_URL',
  'BURNRATE_HOST',
  'BURNRATE_PORT',
  'BURNRATE_TOKEN',
  'BURNRATE_AUTO_UPDATE',
] as const
