/**
 * Heap bytes allocated per call, read from a bench child's event loop through its inspector
 * (the child is started with `--inspect=127.0.0.1:0`; nothing is added to the server itself).
 * V8's sampling heap profiler, keeping what the young and old generations collected, samples one
 * allocation every `interval` bytes on average and scales each sample to the bytes it stands for:
 * the profile's total is an unbiased estimate of every byte allocated on the JS heap while it ran,
 * independent of the machine's load. Allocation on other threads (Burnrate's ledger write thread,
 * a V8 isolate of its own) is not counted. With `save`, the profile is written there (a
 * `.heapprofile` that Chrome DevTools' Memory panel opens, with every allocation's stack).
 */
import { writeFileSync } from 'node:fs'
import type { CallSpec } from './load'
import { runLoad } from './load'

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
  columnNumber: number
}
interface ProfileNode {
  callFrame: CallFrame
  selfSize: number
  children: ProfileNode[]
}

/** A minimal Chrome DevTools Protocol session over the inspector's WebSocket. */
export class Inspector {
  private next = 1
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener('message', (ev) => {
      const msg = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: { message: string } }
      const w = msg.id === undefined ? undefined : this.waiting.get(msg.id)
      if (!w) return
      this.waiting.delete(msg.id!)
      if (msg.error) w.reject(new Error(msg.error.message))
      else w.resolve(msg.result)
    })
  }

  static connect(url: string): Promise<Inspector> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url)
      ws.addEventListener('open', () => resolve(new Inspector(ws)), { once: true })
      ws.addEventListener('error', () => reject(new Error(`cannot reach the inspector at ${url}`)), { once: true })
    })
  }

  send<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.next++
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject })
      this.ws.send(JSON.stringify({ id, method, params }))
    })
  }

  close(): void {
    this.ws.close()
  }
}

/** One allocation site: bytes per call allocated by code at `where` itself (not its callees). */
export interface Site {
  where: string
  bytesPerCall: number
}

export interface HeapPerCall {
  /** JS heap bytes allocated per call answered, the idle rate taken off. */
  bytesPerCall: number
  calls: number
  /** The largest sites, by bytes per call. */
  sites: Site[]
}

function walk(node: ProfileNode, visit: (n: ProfileNode) => void): void {
  visit(node)
  for (const c of node.children) walk(c, visit)
}

function shortUrl(url: string): string {
  const i = url.lastIndexOf('/out/')
  const j = url.lastIndexOf('/node_modules/')
  if (j >= 0) return url.slice(j + 1)
  if (i >= 0) return url.slice(i + 1)
  return url.replace(/^.*\//, '') || '(native)'
}

async function sample(
  insp: Inspector,
  interval: number,
  during: () => Promise<void>,
  save?: string,
  survivors = false,
): Promise<{ total: number; bySite: Map<string, number>; ms: number }> {
  await insp.send('HeapProfiler.collectGarbage')
  await insp.send('HeapProfiler.startSampling', {
    samplingInterval: interval,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: !survivors,
  })
  const t0 = performance.now()
  await during()
  const ms = performance.now() - t0
  // What the young generation still holds would count as surviving it: one scavenge first (the
  // child runs with --expose-gc), so only what outlives it (the calls in flight) is left in.
  if (survivors) await insp.send('Runtime.evaluate', { expression: "gc({ type: 'minor' })" })
  const { profile } = await insp.send<{ profile: { head: ProfileNode } }>('HeapProfiler.stopSampling')
  if (save) writeFileSync(save, JSON.stringify(profile))
  let total = 0
  const bySite = new Map<string, number>()
  walk(profile.head, (n) => {
    if (n.selfSize === 0) return
    total += n.selfSize
    const f = n.callFrame
    const key = `${f.functionName || '(anonymous)'} ${shortUrl(f.url)}:${f.lineNumber + 1}`
    bySite.set(key, (bySite.get(key) ?? 0) + n.selfSize)
  })
  return { total, bySite, ms }
}

/** Drives calls for `ms`, and on until `atLeast` have been answered; returns how many were. Any failed call fails the bench. */
export async function callsFor(url: string, call: CallSpec, connections: number, ms: number, atLeast: number): Promise<number> {
  let ok = 0
  for (let first = true; first || ok < atLeast; first = false) {
    const r = await runLoad(url, call, connections, first ? ms : 1000)
    if (r.errors > 0) throw new Error(`${r.errors} calls failed while sampling the heap`)
    ok += r.ok
  }
  return ok
}

/**
 * Drives `calls` at `connections` through `url` while sampling the child's heap, and an idle
 * stretch as long before it (timers, the idle collector's bookkeeping) to take off.
 */
export async function heapPerCall(
  inspectorUrl: string,
  url: string,
  call: CallSpec,
  opts: {
    ms: number
    connections: number
    /** At least this many calls, however long they take (a busy machine): default none. */
    calls?: number
    interval?: number
    top?: number
    save?: string
    /**
     * Count only the bytes that outlive the young generation (promoted to the old one, whose
     * collection runs on V8's helper threads) instead of every byte allocated; the child must
     * run with --expose-gc.
     */
    survivors?: boolean
  },
): Promise<HeapPerCall> {
  const insp = await Inspector.connect(inspectorUrl)
  try {
    await insp.send('HeapProfiler.enable')
    const interval = opts.interval ?? 512
    const idle = await sample(insp, interval, () => new Promise((r) => setTimeout(r, 500)), undefined, opts.survivors)
    let calls = 0
    const busy = await sample(
      insp,
      interval,
      async () => {
        calls = await callsFor(url, call, opts.connections, opts.ms, opts.calls ?? 0)
      },
      opts.save,
      opts.survivors,
    )
    const idleBytes = (idle.total / idle.ms) * busy.ms
    const sites = [...busy.bySite]
      .map(([where, b]) => ({ where, bytesPerCall: b / calls }))
      .sort((a, b) => b.bytesPerCall - a.bytesPerCall)
      .slice(0, opts.top ?? 0)
    return { bytesPerCall: Math.max(0, busy.total - idleBytes) / calls, calls, sites }
  } finally {
    await insp.send('HeapProfiler.disable').catch(() => {})
    insp.close()
  }
}
