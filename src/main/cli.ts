/**
 * The `burnrate` command (package bin; `node out/main/cli.js`). With no subcommand, or only the
 * server's flags (`--config`, `--host`, `--port`, `--data-dir`), it serves, as it always has.
 * It checks the Node version before loading anything that needs a newer one, and the serve path
 * loads neither the command-line framework nor the report and import code.
 */
const major = Number(process.versions.node.split('.')[0])
if (major < 22) {
  process.stderr.write(`burnrate: Node.js 22 or newer is required (this is ${process.version}); see the README.\n`)
  process.exit(1)
}

// Node's on-disk cache of compiled modules (in the system temp folder): later starts skip
// compiling the server's code and libraries again. Nothing but compiled code is kept there.
const { enableCompileCache } = await import('node:module')
enableCompileCache?.()

const args = process.argv.slice(2)
// The ledger's write thread, the estimate thread and the export thread, built beside this file
// (absent when run from the sources: the ledger then writes itself, estimates are counted and
// exports read on the main thread in slices).
const ledgerWorker = new URL('./ledger-worker.js', import.meta.url)
const estimateWorker = new URL('./estimate-worker.js', import.meta.url)
const exportWorker = new URL('./export-worker.js', import.meta.url)
const { servesDirectly } = await import('./cli/serve-args')
const serveArgs = servesDirectly(args)
if (serveArgs) {
  // V8's optimizing compiler waits until the server listens: about 5 MiB less at rest
  // (./server/startup-tiering.ts); the calls' code is optimized as before.
  const { holdOptimizingCompiler } = await import('./server/startup-tiering')
  const resume = holdOptimizingCompiler()
  try {
    const { runHeadless } = await import('./headless')
    await runHeadless(serveArgs, { ledgerWorker, estimateWorker, exportWorker })
  } finally {
    resume()
  }
} else {
  const { runCli } = await import('./cli/program')
  process.exitCode = await runCli(args, { ledgerWorker })
}

export {}
