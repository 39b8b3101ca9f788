import { existsSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { Argument, InvalidArgumentError, Option } from 'commander'
import type { RegisterCommand } from './types'
import { CliError, EXIT } from '../context'
import { LOG_AGENTS, type LogAgent } from '../../import/types'
import { compact, usd } from '../output'
import { table } from '../table'
import { SETTLE_WHILE_SERVING_MS } from '../sync'
import { unreadableNote } from '../../import/walk'
import { configOf, openLedgerFile, openLocalLedger, pathOption, prepareLocal, serverRunning, urlOption } from '../target'

/** `burnrate import <agent>`: the agent's own logs into the ledger. */
export const importCommand: RegisterCommand = (program, ctx) => {
  // Not withTarget's options: import always writes the ledger file and asks a server nothing but
  // whether it runs, so its help lists only what it uses. --token and --local are still taken
  // (a script may pass every command the same ones) and change nothing.
  program
    .command('import')
    .description("Import calls from an agent's own logs (history, and calls that bypassed the proxy). Safe to repeat.")
    .addArgument(new Argument('<agent>', 'whose logs').choices([...LOG_AGENTS, 'all']))
    .option('--path <dir...>', "log folder(s) to read instead of the agent's standard one", pathValue)
    .option('--tenant <id>', 'tenant to give the imported calls')
    .option('--json', 'print the result as JSON')
    .option('--config <file>', 'config file (default: <data dir>/config.yaml)', pathOption)
    .option('--data-dir <dir>', 'folder of the ledger (default: the OS app-data folder)', pathOption)
    .option('--url <url>', 'a Burnrate recording to this ledger (default: the one serving the data folder); while one runs, calls logged in the last 10 minutes wait for a later import', urlOption)
    .addOption(new Option('--token <token>').hideHelp())
    .addOption(new Option('--local').hideHelp())
    .addHelpText('after', `
Standard folders: claude-code  $CLAUDE_CONFIG_DIR/projects, ~/.config/claude/projects, ~/.claude/projects
                  codex        $CODEX_HOME/sessions (~/.codex/sessions), archived_sessions
                  gemini-cli   ~/.gemini/tmp ($GEMINI_CLI_HOME/.gemini/tmp)
                  opencode     ~/.local/share/opencode ($XDG_DATA_HOME/opencode)`)
    .action(async (agent: LogAgent | 'all', o) => {
      if (agent === 'all' && o.path) throw new CliError('--path needs one agent, not all', EXIT.usage)
      // Every folder given is there, before anything is read or made: with several, one mistyped was left out unsaid.
      if (o.path) checkPaths(o.path)
      const config = configOf(o)
      // With --local too: the file is written either way, and a server beside it may be recording the newest calls.
      const serving = await serverRunning(o, ctx)
      await prepareLocal()
      const { importLogs } = await import('../../import/importer')
      const { localPricer } = await import('../../pricing/local')
      const { spendCounter, spendMover } = await import('../../budgets/state/pg/call-spend')
      // The calls go where the ledger is: the data folder's file, or PostgreSQL with storage.url (import keys stay in the file).
      const ledger = await openLocalLedger({ kind: 'local', config, open: () => openLedgerFile(config) })
      const db = ledger.db
      // PostgreSQL: the calls also count in the shared budget spend rows (the config's periods).
      const target = ledger.store.dialect === 'postgres' ? { store: ledger.store, countSpend: spendCounter(config), moveSpend: spendMover(config) } : {}
      try {
        // As a server on this data folder prices: its runtime prices and its cached newer price data.
        const pricer = localPricer(config, db)
        const results = []
        for (const a of agent === 'all' ? LOG_AGENTS : [agent]) {
          results.push(
            await importLogs(db, {
              agent: a, paths: o.path, pricer, tenant: o.tenant, env: ctx.env, settleMs: serving ? SETTLE_WHILE_SERVING_MS : 0,
              // A server on the same file counts them within seconds (one may be starting now: always).
              announce: true,
              ...target,
            }),
          )
        }
        if (o.json) {
          ctx.stdout.write(JSON.stringify({ results }, null, 2) + '\n')
          return
        }
        ctx.stdout.write(
          table(
            ctx.stdout,
            ['Agent', 'Files', 'Imported', 'Matched', 'Already', 'Bad lines', 'Cost'],
            results.map((s) => [
              s.agent,
              s.missing.length === s.roots.length ? 'no logs' : String(s.files), compact(s.imported), compact(s.matched), compact(s.duplicates), String(s.skipped_lines), usd(s.cost_usd),
            ]),
          ),
        )
        const deferred = results.reduce((n, s) => n + s.deferred, 0)
        const expired = results.reduce((n, s) => n + s.expired, 0)
        const updated = results.reduce((n, s) => n + s.updated, 0)
        const reclassed = results.reduce((n, s) => n + s.reclassed, 0)
        const superseded = results.reduce((n, s) => n + s.superseded, 0)
        for (const s of results) if (s.unreadable.length) ctx.stdout.write(`${unreadableNote(s)}\n`)
        if (updated) ctx.stdout.write(`${updated} calls imported before were still being written then: they now have their final tokens and cost.\n`)
        if (reclassed) ctx.stdout.write(`${reclassed} calls imported before as money were a plan's, as a later line of their log says: they are now plan usage.\n`)
        if (superseded) ctx.stdout.write(`${superseded} calls imported before were the proxy's calls, still streaming then: the proxy's record is now their only cost.\n`)
        if (expired) ctx.stdout.write(`${expired} calls are older than what ledger.retention_days already pruned, and were not imported.\n`)
        if (deferred) ctx.stdout.write(`${deferred} calls written to in the last 10 minutes wait for the next import (a running Burnrate may still be recording them).\n`)
      } finally {
        await ledger.close()
      }
    })
}

/**
 * One `--path` word. It takes every word after it, so `import --path <dir> codex` read the agent
 * as a folder (refused as "missing required argument 'agent'", or "no such folder: codex" with
 * an agent before --path): an agent's name is refused as bad usage saying where it goes, unless a
 * file or folder of that name is here. An empty one is bad usage too, as for every path option.
 */
function pathValue(value: string, previous: string[] | undefined): string[] {
  // An empty one ("$VAR", the variable unset) was "no such folder: ", naming nothing.
  pathOption(value)
  if ((LOG_AGENTS as readonly string[]).concat('all').includes(value) && !existsSync(value)) {
    throw new InvalidArgumentError(`${value} is an agent, not a folder: --path takes every word after it; name the agent before it: burnrate import ${value} --path <dir>`)
  }
  return [...(previous ?? []), value]
}

/**
 * Refuses (exit 1) a `--path` that is not there, naming every such one: with one folder it was
 * refused only after the ledger was opened, and with several a mistyped one was left out unsaid,
 * its agent's calls missing from a run that looked whole. A log file itself (`--path
 * session.jsonl`) is there: 'no such folder' would send one looking for a typo. One that cannot be
 * looked at (no permission) is left to the import, which names it as unreadable.
 */
function checkPaths(paths: readonly string[]): void {
  const missing: string[] = []
  const files: string[] = []
  for (const p of paths) {
    let st
    try {
      st = statSync(p)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') missing.push(p)
      continue
    }
    if (!st.isDirectory()) files.push(p)
  }
  if (files.length) throw new CliError(`--path takes the folder of the agent's logs, not a file: ${files.join(', ')}; give its folder (${dirname(files[0]!)})`)
  if (missing.length) throw new CliError(`no such folder: ${missing.join(', ')}`)
}
