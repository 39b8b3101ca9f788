/* global process */
// Loaded into the built server with --import by test/load/harness.ts (never in production):
// on SIGUSR2 it runs two full garbage collections (the server runs with --expose-gc) and prints
// the process's memory on stderr, so a test can compare memory before and after a load.
process.on('SIGUSR2', () => {
  globalThis.gc?.()
  globalThis.gc?.()
  const m = process.memoryUsage()
  process.stderr.write(
    `BURNRATE_PROBE ${JSON.stringify({ rss: m.rss, heapTotal: m.heapTotal, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers })}\n`,
  )
})
