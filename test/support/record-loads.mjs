// Preload (node --import) for tests: appends the URL of every module this thread loads to the
// file named by BURNRATE_TEST_LOADS, one a line, so a test can see what start-up loaded; and
// `main intl:<Constructor>` the first time the main thread constructs an Intl formatter (which
// loads ICU's locale data); and at exit, `main builtin:<internal module>` for Node's bundled
// dependencies (internal/deps/...) and crypto's parts (WebCrypto among them) it loaded; and
// `main listening <address>:<port>` when a server of the main thread starts listening, so a test
// can tell what start-up loaded before it listened from what came after (a timer's preload).
import { appendFileSync } from 'node:fs'
import net from 'node:net'
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
  if (isMainThread) {
    const listen = net.Server.prototype.listen
    net.Server.prototype.listen = function (...args) {
      this.once('listening', () => {
        const a = this.address()
        if (a && typeof a === 'object') appendFileSync(file, `main listening ${a.address}:${a.port}\n`)
      })
      return listen.apply(this, args)
    }
    // Node's own internal modules (not seen by the hooks) that the process loaded, at exit.
    process.on('exit', () => {
      const internal = process.moduleLoadList.filter((m) => m.startsWith('NativeModule internal/deps/') || m.startsWith('NativeModule internal/crypto/'))
      for (const m of internal) appendFileSync(file, `main builtin:${m.slice('NativeModule '.length)}\n`)
    })
    for (const name of ['DateTimeFormat', 'NumberFormat', 'Collator']) {
      const Original = Intl[name]
      let seen = false
      const note = () => {
        if (!seen) appendFileSync(file, `main intl:${name}\n`)
        seen = true
      }
      Intl[name] = new Proxy(Original, {
        construct(target, args, newTarget) {
          note()
          return Reflect.construct(target, args, newTarget)
        },
        apply(target, self, args) {
          note()
          return Reflect.apply(target, self, args)
        },
      })
    }
  }
}
