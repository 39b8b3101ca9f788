/**
 * The headless entry: `node out/main/cli.js [--config file] [--host h] [--port n] [--data-dir d]`.
 * It checks the Node version before loading anything that needs a newer one.
 */
const major = Number(process.versions.node.split('.')[0])
if (major < 22) {
  process.stderr.write(`burnrate: Node.js 22 or newer is required (this is ${process.version}); see the README.\n`)
  process.exit(1)
}

const { runHeadless } = await import('./headless')
// The ledger's write thread and the estimate thread, built beside this file (absent when run from
// the sources: the ledger then writes itself, and estimates are counted on the main thread in slices).
await runHeadless(process.argv.slice(2), {
  ledgerWorker: new URL('./ledger-worker.js', import.meta.url),
  estimateWorker: new URL('./estimate-worker.js', import.meta.url),
})

export {}
