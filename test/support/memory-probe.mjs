// Preload (node --import) for tests: every 50 ms, writes this process's resident memory to the
// file named by BURNRATE_TEST_MEMORY as JSON: `rss` now and `peak` (the most it has ever held,
// from the OS: getrusage's maxrss, so a moment between two samples is not missed), in bytes, and
// `at`, when it was read (ms since the epoch). Written whole (a new file renamed over the last).
import { renameSync, writeFileSync } from 'node:fs'
import process from 'node:process'
import { setInterval } from 'node:timers'
import { isMainThread } from 'node:worker_threads'

const file = process.env.BURNRATE_TEST_MEMORY
// The main thread's only: the figures are the process's, and its workers load this too.
if (file && isMainThread) {
  const sample = () => {
    writeFileSync(`${file}.tmp`, JSON.stringify({ rss: process.memoryUsage.rss(), peak: process.resourceUsage().maxRSS * 1024, at: Date.now() }))
    renameSync(`${file}.tmp`, file)
  }
  sample()
  setInterval(sample, 50).unref()
}
