/** Flags that belong to the program itself rather than to the server. */
const PROGRAM_FLAGS = new Set(['-h', '--help', '-V', '--version'])

/** The server's flags that take a value (../headless.ts): `--port 8787` is one flag, not a flag and a command. */
const SERVER_VALUE_FLAGS = new Set(['--config', '--host', '--port', '--data-dir'])

/**
 * The program's commands (./commands/index.ts, and Commander's `help`), known here without
 * loading it: options may come before the command (`burnrate --json status`).
 */
export const COMMAND_NAMES: ReadonlySet<string> = new Set(['serve', 'status', 'report', 'export', 'import', 'connect', 'disconnect', 'help'])

/**
 * The server's arguments when this command line just serves (no subcommand, or `serve`
 * without `--help`, with the server's flags before or after it), else null (the command-line
 * program takes it). Kept tiny: serving must not load the program.
 */
export function servesDirectly(args: readonly string[]): string[] | null {
  if (args.length === 0) return []
  const [first, ...rest] = args
  const help = (a: string) => a === '-h' || a === '--help'
  if (first === 'serve') return rest.some(help) ? null : rest
  if (!first.startsWith('-') || PROGRAM_FLAGS.has(first)) return null
  // Options before a command: `burnrate --port 8080 serve` serves; `burnrate --json status` is the program's.
  const at = commandAt(args)
  if (at === -1) return [...args]
  if (args[at] === 'serve' && !args.some(help)) return [...args.slice(0, at), ...args.slice(at + 1)]
  return null
}

/** Where a command's name stands among options (not as a server flag's value), or -1. */
function commandAt(args: readonly string[]): number {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    if (a === '--') return -1
    if (SERVER_VALUE_FLAGS.has(a)) i++
    else if (COMMAND_NAMES.has(a)) return i
  }
  return -1
}
