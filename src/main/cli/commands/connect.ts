import { homedir } from 'node:os'
import type { Command } from 'commander'
import type { RegisterCommand } from './types'
import type { ConnectPlan } from '../../../shared/connect'
import { CliError, EXIT, type CliContext } from '../context'

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

async function setup(o: ConnectOptions, ctx: CliContext) {
  const { loadConfig, ConfigError } = await import('../../config/load')
  const { AgentConnections, ConnectError, proxyNotes } = await import('../../connect/connections')
  const { connectUrl } = await import('../../desktop-logic/port')
  let config
  try {
    config = loadConfig({ config: o.config, dataDir: o.dataDir }, ctx.env)
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message)
    throw err
  }
  const connections = new AgentConnections({ home: o.home ?? homedir(), env: ctx.env, platform: o.platform ?? process.platform, dataDir: config.data_dir })
  const url = o.url ?? connectUrl(config.server.host, config.server.port)
  const wrap = <T>(fn: () => T): T => {
    try {
      return fn()
    } catch (err) {
      if (err instanceof ConnectError) throw new CliError(err.message, err.code === 'unknown_agent' || err.code === 'unsupported' ? EXIT.usage : EXIT.failed)
      throw err
    }
  }
  return { connections, url, wrap, proxyNotes }
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
  const { connections, url, wrap, proxyNotes } = await setup(o, ctx)
  if (!agent) {
    for (const a of connections.list()) {
      const state = a.connected ? `connected to ${a.url}${a.changed_since ? ' (changed by hand since)' : ''}` : a.installed ? 'installed, not connected' : 'not found'
      ctx.stdout.write(`${a.agent.padEnd(12)} ${state}${a.error ? ` — ${a.error}` : ''}\n`)
    }
    ctx.stdout.write(`\nburnrate connect <agent> points one at ${url} (after showing the change); burnrate disconnect <agent> | --all undoes it.\n`)
    for (const n of proxyNotes('your agents', url, { home: o.home ?? homedir(), env: ctx.env, platform: o.platform ?? process.platform })) ctx.stdout.write(`note: ${n}\n`)
    return
  }
  const plan = wrap(() => (o.dryRun ? connections.planConnect(agent, url) : connections.connect(agent, url)))
  printPlan(ctx, plan, !o.dryRun)
  if (!o.dryRun && !plan.noop) ctx.stdout.write(`${connections.connector(agent).note}\n`)
}

/** `burnrate disconnect <agent>` or `--all`: restores what the agents had before. */
export async function runDisconnect(agent: string | undefined, o: ConnectOptions, ctx: CliContext): Promise<void> {
  if (!agent && !o.all) throw new CliError('name an agent, or --all to disconnect every connected agent', EXIT.usage)
  if (agent && o.all) throw new CliError('name an agent or give --all, not both', EXIT.usage)
  const { connections, wrap } = await setup(o, ctx)
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
    .option('--config <file>', 'YAML config file (for the address and data dir)')
    .option('--data-dir <dir>', "Burnrate's data folder (connection records and backups)")
}

export const connect: RegisterCommand = (program, ctx) => {
  common(
    program
      .command('connect [agent]')
      .description('Point an agent at Burnrate by editing its own config (claude-code, codex, gemini-cli, opencode, sdk); with no agent, list them.')
      .option('--url <url>', 'the Burnrate address to point at (default: from the config, http://127.0.0.1:8787)'),
  ).action((agent: string | undefined, o: ConnectOptions) => runConnect(agent, o, ctx))
  common(
    program
      .command('disconnect [agent]')
      .description("Restore an agent's config as it was before Burnrate connected it.")
      .option('--all', 'every agent Burnrate connected'),
  ).action((agent: string | undefined, o: ConnectOptions) => runDisconnect(agent, o, ctx))
}
