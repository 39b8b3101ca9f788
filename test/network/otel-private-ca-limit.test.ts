import type http from 'node:http'
import { readFileSync, rmSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { eventually, postJson, request } from '../support/http'
import { type PrivateCa, makePrivateCa, startHttpsUpstream, startLoggedServer } from './support'
import { startFixtureUpstream } from '../observability/support'

/**
 * With `upstream.ca_file` set (a collector signed by a private CA) and no proxy, an export was
 * given up only after twice `otel.timeout_ms` (and the spans' 5 s after twice it), the allowance
 * for opening a tunnel through a proxy: the CA's own agent was taken for a proxy's. An export goes
 * through no proxy there and is given up after `otel.timeout_ms` (README: OpenTelemetry export).
 */

const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

/** An https:// collector signed by `ca` that sends its headers at once, then a space every 100 ms, never the end. */
async function tricklingCollector(ca: PrivateCa): Promise<string> {
  const answers = new Set<http.ServerResponse>()
  const c = await startHttpsUpstream(ca, (req, res) => {
    req.resume()
    answers.add(res)
    res.writeHead(200, { 'content-type': 'application/json' })
    const drip = setInterval(() => res.write(' '), 100)
    res.on('close', () => {
      clearInterval(drip)
      answers.delete(res)
    })
  })
  cleanups.push(async () => {
    for (const r of answers) r.destroy()
    await c.close()
  })
  return c.url
}

async function exporting(otel: Record<string, unknown>): Promise<() => Promise<{ last_error: string | null }>> {
  const ca = makePrivateCa()
  cleanups.push(async () => rmSync(ca.dir, { recursive: true, force: true }))
  const collector = await tricklingCollector(ca)
  const upstream = await startFixtureUpstream()
  cleanups.push(() => upstream.close())
  const s = await startLoggedServer(
    { upstream: { ca_file: 'ca.pem' }, providers: { openai: { base_url: `${upstream.url}/v1` } }, otel: { endpoint: collector, ...otel } },
    { 'ca.pem': readFileSync(ca.caFile) },
  )
  cleanups.push(() => s.stop())
  const headers = { authorization: 'Bearer sk-otel-ca-limit-0001', 'x-fixture': 'openai-chat/chat-nonstream-cached.json' }
  expect((await postJson(`${s.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, headers)).status).toBe(200)
  return async () => (await request(`${s.url}/api/health`)).json().otel
}

describe('the OTLP export to a collector signed by upstream.ca_file, with no proxy', () => {
  it('gives a metric export up after otel.timeout_ms, not twice it', async () => {
    const health = await exporting({ traces: false, timeout_ms: 300, interval_ms: 3000 })
    const otel = await eventually(async () => {
      const o = await health()
      return o.last_error ? o : null
    }, 30_000)
    expect(otel?.last_error).toMatch(/^metric export .*: no answer within 300 ms$/)
  }, 60_000)

  it('gives a span export up 5 s after otel.timeout_ms, not 5 s after twice it', async () => {
    const health = await exporting({ metrics: false, timeout_ms: 1000 })
    const otel = await eventually(async () => {
      const o = await health()
      return o.last_error ? o : null
    }, 30_000)
    expect(otel?.last_error).toMatch(/^span export .*: no answer within 6 s$/)
  }, 60_000)
})
