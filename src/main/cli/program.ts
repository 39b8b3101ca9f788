import { Command, CommanderError } from 'commander'
import { version } from '../../../package.json'
import { COMMANDS } from './commands'
import { CliError, EXIT, type CliContext } from './context'
import { readerGone } from './stdout-sink'

/**
 * Runs one `burnrate <command>` and returns its exit code (see EXIT): the commands are
 * registered from ./commands, each one file.
 */
export async function runCli(args: readonly string[], opts: { ledgerWorker?: URL } = {}): Promise<number> {
  const ctx: CliContext = {
    ledgerWorker: opts.ledgerWorker,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
  }
  // A reader that stops early (`| head`) is not an error: the command ends as it would have (an
  // export stops writing and gives back its connection and snapshot first: ./stdout-sink.ts) and
  // exits 0. Any other failure to write the output (a full disk: `export > calls.csv`) is, or a CI
  // would take a cut file for the whole one.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (readerGone(err)) return
    process.stderr.write(`burnrate: cannot write the output: ${err.message}\n`)
    process.exit(EXIT.failed)
  })
  const width = Math.min(80, process.stdout.columns || 80)
  const program = new Command('burnrate')
    .description('Meters every AI agent call: a local proxy, its ledger, reports and budgets.')
    .version(version, '-V, --version')
    .exitOverride()
    .configureHelp({ helpWidth: width, showGlobalOptions: false })
    .configureOutput({
      writeOut: (s) => ctx.stdout.write(s),
      writeErr: (s) => ctx.stderr.write(s),
      outputError: (s, write) => write(`burnrate: ${s.replace(/^error: /, '')}`),
    })
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', `\nExit codes: 0 done, 1 failed (the message says why), 2 bad usage.\nWith no command, or only server flags, burnrate serves.`)
  for (const register of COMMANDS) register(program, ctx)

  try {
    await program.parseAsync(commandFirst(program, args), { from: 'user' })
    return EXIT.ok
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return EXIT.ok
      return EXIT.usage
    }
    if (readerGone(err)) return EXIT.ok
    if (err instanceof CliError) {
      ctx.stderr.write(`burnrate: ${err.message}\n`)
      return err.exitCode
    }
    ctx.stderr.write(`burnrate: ${(err as Error)?.message ?? String(err)}\n`)
    return EXIT.failed
  }
}

/**
 * Options given before the command are the command's: `burnrate --json status` is
 * `burnrate status --json` (Commander reads options before a subcommand as the program's own,
 * which has none but --help and --version, and said 'unknown option'). The command is the first
 * word that is not an option or a value of one of that command's options, so `--tenant status
 * report daily` is the report of the tenant named status; a variadic option's (`--path <dir...>`)
 * values are the words up to the next option or the command's name. The options go after the
 * command's own arguments, where a variadic option cannot take them. A line that starts with
 * --help or --version, or names no command, is left as it is.
 */
function commandFirst(program: Command, args: readonly string[]): string[] {
  if (!args[0]?.startsWith('-') || ['-h', '--help', '-V', '--version'].includes(args[0])) return [...args]
  for (const cmd of program.commands) {
    const flags = (o: (typeof cmd.options)[number]) => [o.long, o.short].filter((f): f is string => !!f)
    const takesValue = new Set(cmd.options.filter((o) => o.required || o.optional).flatMap(flags))
    const variadic = new Set(cmd.options.filter((o) => o.variadic).flatMap(flags))
    const isOption = (a: string) => a.startsWith('-') && a !== '-'
    for (let i = 0; i < args.length; i++) {
      const a = args[i]
      if (a === '--') break
      if (isOption(a)) {
        if (takesValue.has(a)) i++
        // A variadic option (`--path a b import codex`) takes the words after its first up to an option or the command's name.
        if (variadic.has(a)) while (i + 1 < args.length && !isOption(args[i + 1]) && args[i + 1] !== cmd.name()) i++
        continue
      }
      if (a !== cmd.name()) break
      const rest = args.slice(i + 1)
      const end = rest.includes('--') ? rest.indexOf('--') : rest.length
      return [a, ...rest.slice(0, end), ...args.slice(0, i), ...rest.slice(end)]
    }
  }
  return [...args]
}
