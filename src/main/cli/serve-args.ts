/** Flags that belong to the program itself rather than to the server. */
const PROGRAM_FLAGS = new Set(['-h', '--help', '-V', '--version'])

/**
 * The server's arguments when this command line just serves (no subcommand, or `serve`
 * without `--help`), else null (the command-line program takes it). Kept tiny: serving must
 * not load the program.
 */
export function servesDirectly(args: readonly string[]): string[] | null {
  if (args.length === 0) return []
  const [first, ...rest] = args
  if (first === 'serve') return rest.some((a) => a === '-h' || a === '--help') ? null : rest
  if (first.startsWith('-') && !PROGRAM_FLAGS.has(first)) return [...args]
  return null
}
