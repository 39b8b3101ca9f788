import type { RegisterCommand } from './types'

/**
 * `burnrate serve`: the headless server. The command line normally never gets here (cli.ts
 * serves without loading the program); this is what `burnrate serve --help` describes.
 */
export const serve: RegisterCommand = (program, ctx) => {
  program
    .command('serve')
    .description('Run the proxy, ledger and dashboard until SIGINT, SIGTERM or SIGHUP (the default command).')
    .option('--config <file>', 'YAML config file (default: <data dir>/config.yaml)')
    .option('--host <address>', 'address to listen on (default 127.0.0.1)')
    .option('--port <n>', 'port to listen on (default 8787; 0 picks a free one)')
    .option('--data-dir <dir>', 'folder of the ledger (default: the OS app-data folder)')
    .addHelpText('after', '\nEnvironment: BURNRATE_CONFIG, BURNRATE_HOST, BURNRATE_PORT, BURNRATE_DATA_DIR, BURNRATE_DATABASE_URL (flags win).')
    .action(async (opts) => {
      const { runHeadless } = await import('../../headless')
      await runHeadless(argsOf(opts), { ledgerWorker: ctx.ledgerWorker })
    })
}

function argsOf(o: Record<string, string | undefined>): string[] {
  const out: string[] = []
  if (o.config) out.push('--config', o.config)
  if (o.host) out.push('--host', o.host)
  if (o.port) out.push('--port', o.port)
  if (o.dataDir) out.push('--data-dir', o.dataDir)
  return out
}
