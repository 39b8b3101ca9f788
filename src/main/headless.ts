import { parseArgs } from 'node:util'
import { ConfigError, loadConfig, parsePort } from './config/load'
import { createLogger } from './log'
import { StartupError, createBurnrate } from './server/server'

const USAGE = `Usage: burnrate [--config <file>] [--host <address>] [--port <n>] [--data-dir <dir>]

Environment: BURNRATE_CONFIG, BURNRATE_HOST, BURNRATE_PORT, BURNRATE_DATA_DIR, BURNRATE_DATABASE_URL (flags win).`

/** Runs the server core under plain Node until SIGINT or SIGTERM, then flushes and exits. */
export async function runHeadless(argv: string[], opts: { ledgerWorker?: URL; estimateWorker?: URL; exportWorker?: URL } = {}): Promise<void> {
  // What reads the log can go before the server: the terminal closed (EIO), `| tee` or `| head`
  // ended (EPIPE). A failed write is dropped; unhandled, it ended the process at once, the calls
  // not yet written with it (a stop's first line fails so, SIGHUP's always).
  for (const out of [process.stdout, process.stderr]) out.on('error', () => {})
  const log = createLogger()
  let flags
  try {
    flags = parseArgs({
      args: argv,
      options: {
        config: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        'data-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values
  } catch (err) {
    process.stderr.write(`burnrate: ${(err as Error).message}\n${USAGE}\n`)
    process.exit(2)
  }
  if (flags.help) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  // A bad value on the command line is bad usage (2), as an unknown flag is; a config that is
  // refused or a port already taken is a failure to start (1).
  // An empty path ("$VAR", the variable unset) is no path: the current folder would have the ledger.
  for (const name of ['config', 'data-dir', 'host'] as const) {
    if (flags[name] !== undefined && flags[name].trim() === '') {
      process.stderr.write(`burnrate: --${name}: give a value; leave the flag out for its default\n`)
      process.exit(2)
    }
  }
  if (flags.port !== undefined) {
    try {
      parsePort(flags.port, '--port')
    } catch (err) {
      process.stderr.write(`burnrate: ${(err as Error).message}\n`)
      process.exit(2)
    }
  }

  let server
  try {
    const config = loadConfig({ config: flags.config, host: flags.host, port: flags.port, dataDir: flags['data-dir'] })
    server = createBurnrate(config, { log, ledgerWorker: opts.ledgerWorker, estimateWorker: opts.estimateWorker, exportWorker: opts.exportWorker })
    const url = await server.listen()
    log.info(`Burnrate listening on ${url} (data: ${config.data_dir}, config: ${config.source ?? 'defaults'})`)
  } catch (err) {
    if (err instanceof ConfigError || err instanceof StartupError) {
      process.stderr.write(`burnrate: ${err.message}\n`)
      if (server) await server.close(0).catch(() => {})
      // BURNRATE_PORT=abc is bad usage (2), as --port abc is.
      process.exit(err instanceof ConfigError && err.usage ? 2 : 1)
    }
    throw err
  }

  let stopping = false
  let exiting = false
  const stop = (signal: string) => {
    if (stopping) {
      if (exiting) return
      exiting = true
      // Calls under way are cut; what is queued (with the calls whose token estimate was being
      // counted) is written, or kept in a spill file when the database cannot take it (locked
      // by another process), as a stop that waits would.
      log.warn(`${signal} again: exiting without waiting`)
      void server
        .keepPending()
        .catch((err: Error) => log.error(`keeping the waiting calls failed: ${err.message}`))
        .finally(() => process.exit(1))
      return
    }
    stopping = true
    log.info(`${signal}: finishing calls under way and flushing the ledger`)
    server
      .close()
      // A second signal meanwhile cuts the calls under way, which may let this stop end first: its exit (1) stands.
      // A step that failed (logged) exits 1, once every step has run and the ledger is flushed and closed.
      .then((ok) => exiting || process.exit(ok ? 0 : 1))
      .catch((err: Error) => {
        log.error(`shutdown failed: ${err.message}`)
        process.exit(1)
      })
  }
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGTERM', () => stop('SIGTERM'))
  // The terminal or ssh session it was started from closed: without a handler Node exits at once,
  // losing the calls not yet written (there is no reload to do on it: the config is read at start).
  process.on('SIGHUP', () => stop('SIGHUP'))
}
