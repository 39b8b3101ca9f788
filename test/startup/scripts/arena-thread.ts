/**
 * Spawned by idle.test.ts (`node --import tsx arena-thread.ts lowered|kept`): what a thread's
 * glibc arena keeps after the thread ends. A Worker fills an in-memory SQLite database (its pages
 * are malloc'd in the thread's own arena, as the ledger's write thread's cache is), then closes it
 * and ends; glibc's trim threshold is raised first, as a load raises it (freeing an mmapped chunk
 * sets it to twice the chunk's size). With `lowered`, the threshold is lowered before the thread
 * ends, as the idle collector does once calls have been quiet. Both then trim (the idle release).
 * Prints the anonymous resident memory the process holds more than before the thread started.
 */
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { lowerTrimThreshold, releaseFreedMemory } from '../../../src/main/server/malloc-trim'

const anonKiB = () => Number(/^RssAnon:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1])

const koffi = createRequire(import.meta.url)('koffi') as { load(p: string): { func(s: string): (...a: unknown[]) => unknown } }
const libc = koffi.load('libc.so.6')
const malloc = libc.func('void *malloc(size_t size)')
const free = libc.func('void free(void *ptr)')
// 12 MiB is above glibc's initial mmap threshold: mmapped, and its free raises the trim threshold to 24 MiB.
free(malloc(12 * 1024 * 1024))

const before = anonKiB()
const thread = new Worker(
  `const { parentPort } = require('node:worker_threads')
   const db = new (require('better-sqlite3'))(':memory:')
   db.exec('CREATE TABLE t (b BLOB)')
   const insert = db.prepare('INSERT INTO t VALUES (randomblob(4000))')
   for (let i = 0; i < 4000; i++) insert.run()
   parentPort.postMessage('filled')
   parentPort.once('message', () => { db.close(); parentPort.close() })`,
  { eval: true },
)
await once(thread, 'message')
const filled = anonKiB()
if (process.argv[2] === 'lowered' && !lowerTrimThreshold()) throw new Error('the trim threshold could not be set')
thread.postMessage('end')
await once(thread, 'exit')
releaseFreedMemory()
process.stdout.write(`${JSON.stringify({ filledMiB: (filled - before) / 1024, keptMiB: (anonKiB() - before) / 1024 })}\n`)
