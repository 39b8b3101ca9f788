/**
 * Spawned by idle.test.ts (`node --import tsx arena-thread.ts lowered|kept`): what a thread's
 * glibc arena keeps at its top after the thread ends. glibc's trim threshold is raised first, as a
 * load raises it (freeing an mmapped chunk of 12 MiB sets the mmap threshold to 12 MiB and the
 * trim threshold to twice that). A Worker then mallocs 16 MiB in its own arena, 16 chunks of 1 MiB
 * (below the raised mmap threshold, so the arena carves them from its top one after another), and
 * touches them; when it ends it frees them last first, so that each joins the arena's top, as the
 * ledger's write thread's SQLite cache joins it when the thread closes its connection. That top is
 * what `malloc_trim` cannot give back (it trims only the main arena's top): only a free in that
 * arena can, and only when the top is larger than the trim threshold. With `lowered`, the
 * threshold is lowered before the thread ends, as the idle collector does once calls have been
 * quiet. Both then trim (the idle release). Prints the anonymous resident memory the fill added
 * (`filledMiB`) and what the process holds more than before the thread started (`keptMiB`).
 *
 * Why plain malloc and not an SQLite database's cache (as this script first filled): how much of
 * SQLite's freed pages joined the top and how much stayed in the arena's free lists (which
 * `malloc_trim` does give back) depended on the order it freed them, so the control kept anywhere
 * from 5 to 22 MiB. Here the order is fixed, and so is the layout: the 256 KiB freed between the
 * first chunk and the others is where the thread's own small mallocs go meanwhile (glibc serves
 * them from a free chunk before it cuts into the top), so none lands between the chunks or above
 * them. `contiguous` says the chunks were found one after another.
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
   const { readFileSync } = require('node:fs')
   const koffi = require('koffi')
   const c = koffi.load('libc.so.6')
   const malloc = c.func('void *malloc(size_t size)')
   const free = c.func('void free(void *ptr)')
   const memset = c.func('void *memset(void *s, int c, size_t n)')
   const anonKiB = () => Number(/^RssAnon:\\s+(\\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))[1])
   const MiB = 1024 * 1024
   const cushion = malloc(256 * 1024)
   const start = anonKiB()
   const chunks = [malloc(MiB)]
   free(cushion)
   for (let i = 1; i < 16; i++) chunks.push(malloc(MiB))
   for (const p of chunks) memset(p, 1, MiB)
   const filledMiB = (anonKiB() - start) / 1024
   // glibc's chunk header is 16 bytes on 64-bit.
   const at = chunks.map((p) => koffi.address(p))
   const contiguous = at.every((a, i) => i === 0 || a - at[i - 1] === BigInt(MiB + 16))
   parentPort.postMessage({ filledMiB, contiguous })
   parentPort.once('message', () => {
     for (let i = chunks.length - 1; i >= 0; i--) free(chunks[i])
     parentPort.close()
   })`,
  { eval: true },
)
const [filled] = (await once(thread, 'message')) as [{ filledMiB: number; contiguous: boolean }]
if (process.argv[2] === 'lowered' && !lowerTrimThreshold()) throw new Error('the trim threshold could not be set')
thread.postMessage('end')
await once(thread, 'exit')
releaseFreedMemory()
process.stdout.write(`${JSON.stringify({ ...filled, keptMiB: (anonKiB() - before) / 1024 })}\n`)
