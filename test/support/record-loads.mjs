// Preload (node --import) for tests: appends the URL of every module this thread loads to the
// file named by BURNRATE_TEST_LOADS, one a line, so a test can see what start-up loaded.
import { appendFileSync } from 'node:fs'
import process from 'node:process'
import { registerHooks } from 'node:module'
import { isMainThread } from 'node:worker_threads'

const file = process.env.BURNRATE_TEST_LOADS
if (file) {
  const thread = isMainThread ? 'main' : 'worker'
  registerHooks({
    load(url, context, next) {
      appendFileSync(file, `${thread} ${url}\n`)
      return next(url, context)
    },
  })
}
