import { homedir } from 'node:os'
import type { Command } from 'commander'
import type { RegisterCommand } from './types'
import type { ConnectPlan } from '../../../shared/connect'
import { CliError, EXIT, type CliContext } from '../context'
import { originOption, pathOption } from '../target'

export interface ConnectOptions {
  config?: string
  dataDir?: string
  url?: string
  dryRun?: boolean
  all?: boolean
  /** The home folder whose agents are edited (tests); default the user's. */
  home?: string
  platform?: NodeJS.Platform
}

/**
 * The agents' connections and the address to point them at. `undo` (disconnect): a config that
 * does not load (a typo) is said and the data folder found anyway, since agents pointed at a
 * server that cannot start must still be restored.
 */
async function setup(o: ConnectOptions, ctx: CliContext, undo = false) {
  const { loadConfig, dataDirAnyway, ConfigError } = await import('../../config/load')
  const { AgentConnections, ConnectError, proxyNotes } = await import('../../connect/connections')
  const { connectUrl, reachableUrl } = await import('../../desktop-logic/port')
  const { dataDirServer } = await import('../../server/data-lock')
  const flags = { config: o.config, dataDir: o.dataDir }
  let config: import('../../config/schema').Config | null = null
  let dataDir: string
  try {
    config = loadConfig(flags, ctx.env)
    dataDir = config.data_dir
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    if (!undo) throw new CliError(err.message, err.usage ? EXIT.usage : EXIT.failed)
    dataDir = dataDirAnyway(flags, ctx.env)
    ctx.stderr.write(`burnrate: ${err.message}\nburnrate: disconnecting all the same, with the records in ${dataDir}\n`)
  }
  const connections = new AgentConnections({ home: o.home ?? homedir(), env: ctx.env, platform: o.platform ?? process.platform, dataDir })
  // server.port 0: a free port at each start. Only the running server's address can be pointed at,
  // and only until it stops.
  let url = o.url ?? (config ? connectUrl(config.server.host, config.server.port) : '')
  let portNote: string | null = null
  let noAddress: string | null = null
  if (!o.url && config?.server.port === 0) {
    const running = dataDirServer(dataDir)?.url
    if (running && new URL(running).port !== '0') {
      url = reachableUrl(running)
      portNote = `server.port is 0: pointing at the running server's ${url}, which changes when it starts again (set server.port to keep one address)`
    } else {
      noAddress = 'server.port is 0 (a free port at each start) and no Burnrate serves this data folder now, so there is no address to point agents at; set server.port, or give --url'
    }
  }
  /** The address to point an agent at, or a usage error when there is none. */
  const target = (): string => {
    if (noAddress) throw new CliError(noAddress, EXIT.usage)
    if (portNote) ctx.stderr.write(`note: ${portNote}\n`)
    return url
  }
  const wrap = <T>(fn: () => T): T => {
    try {
      return fn()
    } catch (err) {
      if (err instanceof ConnectError) throw new CliError(err.message, err.code === 'unknown_agent' || err.code === 'unsupported' ? EXIT.usage : EXIT.failed)
      throw err
    }
  }
  return { connections, url, target, wrap, proxyNotes }
}

function printPlan(ctx: CliContext, plan: ConnectPlan, applied: boolean): void {
  for (const c of plan.changes) ctx.stdout.write(c.diff.endsWith('\n') ? c.diff : c.diff + '\n')
  for (const n of plan.notes) ctx.stdout.write(`note: ${n}\n`)
  const verb = plan.action === 'connect' ? `connected to ${plan.url}` : 'disconnected'
  if (plan.noop) ctx.stdout.write(`${plan.agent}: nothing to change${plan.action === 'connect' ? ` (already ${verb})` : ''}\n`)
  else ctx.stdout.write(applied ? `${plan.agent}: ${verb}\n` : `${plan.agent}: would be ${verb} (dry run: nothing written)\n`)
}

/** `burnrate connect [agent]`: without an agent, lists them; with one, shows the change and makes it. */
export async function runConnect(agent: string | undefined, o: ConnectOptions, ctx: CliContext): Promise<void> {
  const { connections, url, target, wrap, proxyNotes } = await setup(o, ctx)
  if (!agent) {
    for (const a of connections.list()) {
      const state = a.connected ? `connected to ${a.url}${a.changed_since ? ' (changed by hand since)' : ''}` : a.installed ? 'installed, not connected' : 'not found'
      ctx.stdout.write(`${a.agent.padEnd(12)} ${state}${a.error ? ` — ${a.error}` : ''}\n`)
      for (const w of a.warnings) ctx.stdout.write(`${''.padEnd(12)} warning: ${w}\n`)
    }
    let to: string | null = null
    try {
      to = target()
    } catch (err) {
      ctx.stdout.write(`\n${(err as Error).message}.\n`)
    }
    if (to) ctx.stdout.write(`\nburnrate connect <agent> points one at ${to} (after showing the change); burnrate disconnect <agent> | --all undoes it.\n`)
    for (const n of proxyNotes('your agents', url, { home: o.home ?? homedir(), env: ctx.env, platform: o.platform ?? process.platform })) ctx.stdout.write(`note: ${n}\n`)
    return
  }
  const to = target()
  const plan = wrap(() => (o.dryRun ? connections.planConnect(agent, to) : connections.connect(agent, to)))
  printPlan(ctx, plan, !o.dryRun)
  if (!o.dryRun && !plan.noop) ctx.stdout.write(`${connections.connector(agent).note}\n`)
}

/** `burnrate disconnect <agent>` or `--all`: restores what the agents had before. */
export async function runDisconnect(agent: string | undefined, o: ConnectOptions, ctx: CliContext): Promise<void> {
  if (!agent && !o.all) throw new CliError('name an agent, or --all to disconnect every connected agent', EXIT.usage)
  if (agent && o.all) throw new CliError('name an agent or give --all, not both', EXIT.usage)
  const { connections, wrap } = await setup(o, ctx, true)
  const agents = agent ? [agent] : connections.connected().map((c) => c.agent)
  if (agents.length === 0) ctx.stdout.write('No agent is connected by Burnrate.\n')
  const failed: string[] = []
  for (const a of agents) {
    try {
      printPlan(ctx, wrap(() => (o.dryRun ? connections.planDisconnect(a) : connections.disconnect(a))), !o.dryRun)
    } catch (err) {
      if (!(err instanceof CliError) || !o.all) throw err
      ctx.stderr.write(`burnrate: ${a}: ${err.message}\n`)
      failed.push(a)
    }
  }
  if (failed.length) throw new CliError(`could not disconnect ${failed.join(', ')} (see above); the others are disconnected`)
}

function common(cmd: Command): Command {
  return cmd
    .option('--dry-run', 'only show what would change')
    .option('--config <file>', 'YAML config file (for the address and data dir)', pathOption)
    .option('--data-dir <dir>', "Burnrate's data folder (connection records and backups)", pathOption)
}

export const connect: RegisterCommand = (program, ctx) => {
  common(
    program
      .command('connect [agent]')
      .description('Point an agent at Burnrate by editing its own config (claude-code, codex, gemini-cli, opencode, sdk); with no agent, list them.')
      .option('--url <url>', 'the Burnrate address to point at, http(s)://host:port without a path (default: from the config, http://127.0.0.1:8787)', originOption),
  ).action((agent: string | undefined, o: ConnectOptions) => runConnect(agent, o, ctx))
  common(
    program
      .command('disconnect [agent]')
      .description("Restore an agent's config as it was before Burnrate connected it.")
      .option('--all', 'every agent Burnrate connected'),
  ).action((agent: string | undefined, o: ConnectOptions) => runDisconnect(agent, o, ctx))
}
