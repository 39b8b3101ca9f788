/**
 * Spawned by idle.test.ts (`node --import tsx arena-chunk.ts dynamic|fixed`): what a living
 * thread's glibc arena keeps of a large chunk it freed. First, as a load does, a 12 MiB chunk is
 * mmapped and freed on the main thread, which makes glibc raise its mmap threshold to 12 MiB (and
 * its trim threshold to 24 MiB) — unless, with `fixed`, the thresholds were fixed before
 * (`fixMmapThreshold`, as the server does after its first call). Then a Worker (its own arena, as
 * each of V8's helper threads has) mallocs 8 MiB, fills it and frees it, as V8's compiler frees
 * a zone, and stays alive; the main thread then lowers the trim threshold and trims, as the idle
 * collector does once calls are quiet. Prints the anonymous resident memory the process holds
 * more than before the chunk was allocated (after a collection and a trim, so that only the chunk
 * is counted: run with --expose-gc).
 */
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { fixMmapThreshold, lowerTrimThreshold, releaseFreedMemory } from '../../../src/main/server/malloc-trim'

const anonKiB = () => Number(/^RssAnon:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1])

const koffi = createRequire(import.meta.url)('koffi') as { load(p: string): { func(s: string): (...a: unknown[]) => unknown } }
const libc = koffi.load('libc.so.6')
const malloc = libc.func('void *malloc(size_t size)')
const free = libc.func('void free(void *ptr)')
if (process.argv[2] === 'fixed' && !fixMmapThreshold()) throw new Error("glibc's thresholds could not be set")
free(malloc(12 * 1024 * 1024))

const MiB8 = 8 * 1024 * 1024
const thread = new Worker(
  `const { parentPort } = require('node:worker_threads')
   const libc = require('koffi').load('libc.so.6')
   const malloc = libc.func('void *malloc(size_t size)')
   const memset = libc.func('void *memset(void *p, int c, size_t n)')
   const free = libc.func('void free(void *ptr)')
   parentPort.postMessage('ready')
   parentPort.once('message', () => {
     const p = malloc(${MiB8})
     memset(p, 1, ${MiB8})
     free(p)
     parentPort.postMessage('freed')
     parentPort.once('message', () => parentPort.close())
   })`,
  { eval: true },
)
await once(thread, 'message')
// What start-up left to collect and trim is given back first (the trim below would give it back
// too, and count it against the chunk: on a busy machine, 10 MiB of it once made the figure negative).
;(globalThis as { gc?: () => void }).gc?.()
releaseFreedMemory()
const before = anonKiB()
thread.postMessage('go')
await once(thread, 'message')
if (!lowerTrimThreshold()) throw new Error('the trim threshold could not be set')
releaseFreedMemory()
const kept = anonKiB() - before
thread.postMessage('end')
await once(thread, 'exit')
process.stdout.write(`${JSON.stringify({ keptMiB: kept / 1024 })}\n`)
