import http from 'node:http'
import { createHistogram, performance, type RecordableHistogram } from 'node:perf_hooks'

/** One kind of call the load generator repeats. */
export interface CallSpec {
  method: string
  path: string
  headers: Record<string, string>
  body: Buffer
  /** Exact body length every answer must have; anything else counts as an error. */
  expectBytes: number
}

export interface LoadResult {
  /** Per-call latency, request start to last response byte, in nanoseconds. */
  latency: RecordableHistogram
  /** Calls answered correctly (status 200, expected length). */
  ok: number
  errors: number
  /** Wall time the load ran, in ms. */
  elapsedMs: number
}

/**
 * Keeps `connections` keep-alive connections busy with `call` against `baseUrl` for
 * `durationMs`: each connection sends the next call as soon as the previous one ended
 * (closed loop), so at 1 connection it measures latency and at many, throughput.
 */
export async function runLoad(baseUrl: string, call: CallSpec, connections: number, durationMs: number): Promise<LoadResult> {
  const url = new URL(baseUrl)
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections })
  const latency = createHistogram({ lowest: 1, highest: 120e9, figures: 3 })
  const headers = { ...call.headers, 'content-length': String(call.body.length) }
  const opts: http.RequestOptions = {
    hostname: url.hostname,
    port: url.port,
    method: call.method,
    path: call.path,
    headers,
    agent,
  }
  let ok = 0
  let errors = 0

  function once(): Promise<boolean> {
    return new Promise((resolve) => {
      const req = http.request(opts, (res) => {
        let bytes = 0
        res.on('data', (c: Buffer) => {
          bytes += c.length
        })
        res.on('end', () => resolve(res.statusCode === 200 && bytes === call.expectBytes))
        res.on('error', () => resolve(false))
      })
      req.on('error', () => resolve(false))
      req.end(call.body)
    })
  }

  const start = performance.now()
  const end = start + durationMs
  async function worker(): Promise<void> {
    while (performance.now() < end) {
      const t0 = process.hrtime.bigint()
      const good = await once()
      const ns = Number(process.hrtime.bigint() - t0)
      if (good) {
        ok++
        latency.record(Math.max(1, ns))
      } else {
        errors++
      }
    }
  }
  await Promise.all(Array.from({ length: connections }, worker))
  const elapsedMs = performance.now() - start
  agent.destroy()
  return { latency, ok, errors, elapsedMs }
}
