import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, openConnections, postJson, request } from '../support/http'
import type { MockUpstream, Reply } from '../support/mock-upstream'
import { ledgerRows } from '../support/ledger-rows'
import { serversPerTest, type TestServer } from '../support/server'

/**
 * A client that leaves while a non-streamed answer is on its way. The provider generated (and
 * billed) the whole answer before it sent the first byte, and its usage comes at the end of the
 * body: Burnrate reads the rest of the answer on, for its bill, and records the call 499 at the
 * answer's own usage and price (builds before this one stopped reading and recorded the prompt's
 * estimate, $0.0002 for an answer of $0.0003 here), its budget settled at that cost.
 */

// gpt-4o-mini-2024-07-18: prompt 1149 (1024 cached), completion 353 (test/fixtures/README.md).
const ANSWER = fixture('openai-chat/chat-nonstream-cached.json')
const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Summarise the week in AI.' }] })
const KEY = 'sk-left-00000000000000000001'
const CONFIG = {
  timezone: 'UTC',
  upstream: { idle_timeout_ms: 2000 },
  budgets: { rules: [{ api_key_pattern: 'sk-left-*', daily_limit_usd: 100, action: 'block' }] },
}

const servers = serversPerTest()

function rows(t: TestServer): any[] {
  return ledgerRows(t.dbFile)
}

/** A gate the mock upstream waits at before the rest of its answer. */
function gate(): { release: Promise<void>; open: () => void } {
  let open!: () => void
  const release = new Promise<void>((r) => (open = r))
  return { release, open }
}

/** The answer in two halves: the mock sends the first, then waits at `release` for the second. */
function halves(release: Promise<void>, extra: Partial<Reply> = {}): Reply {
  const half = Math.floor(ANSWER.length / 2)
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    chunks: [ANSWER.subarray(0, half), ANSWER.subarray(half)],
    holdAfterChunks: 1,
    release,
    ...extra,
  }
}

/** POSTs the call and destroys the socket at the answer's first bytes; resolves once Burnrate has seen the client go. */
async function callAndLeave(t: TestServer): Promise<void> {
  await new Promise<void>((resolve) => {
    const req = http.request(`${t.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, agent: false }, (res) => {
      res.once('data', () => {
        req.destroy()
        resolve()
      })
    })
    req.on('error', () => resolve())
    req.end(BODY)
  })
  await eventually(async () => (await openConnections(t.server.http)) === 0)
}

/** A call whose client stays to the end of the same answer: what the answer costs. */
async function wholeCall(t: TestServer, upstream: MockUpstream): Promise<any> {
  upstream.setResponder(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: ANSWER }))
  const before = rows(t).length
  expect((await postJson(`${t.url}/v1/chat/completions`, JSON.parse(BODY), { authorization: `Bearer ${KEY}` })).status).toBe(200)
  return eventually(() => rows(t)[before])
}

async function spent(t: TestServer): Promise<number> {
  const b = (await request(`${t.url}/api/dashboard/budgets`)).json()
  return b.rules[0].windows.find((w: any) => w.period === 'daily').spent_usd
}

async function setUp(config: Record<string, any> = CONFIG): Promise<{ t: TestServer; upstream: MockUpstream; whole: any }> {
  const upstream = await servers.upstream()
  const t = await servers.server(config, upstream.url)
  const whole = await wholeCall(t, upstream)
  expect(whole).toMatchObject({ status: 200, input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353, estimated: 0 })
  expect(whole.cost_usd).toBeGreaterThan(0)
  return { t, upstream, whole }
}

describe('a client that leaves during a non-streamed answer', () => {
  it('the rest of the answer is read for its bill: recorded 499 at its real usage and price, the budget settled at it', async () => {
    const { t, upstream, whole } = await setUp()
    const g = gate()
    upstream.setResponder(() => halves(g.release))
    const before = rows(t).length
    await callAndLeave(t)
    g.open()
    const row = await eventually(() => rows(t)[before])
    expect(row).toMatchObject({
      status: 499,
      error: 'client_aborted',
      model: whole.model,
      input_tokens: whole.input_tokens,
      cache_read_tokens: whole.cache_read_tokens,
      output_tokens: 353,
      cost_usd: whole.cost_usd,
      estimated: 0,
    })
    expect(t.server.proxy.active).toBe(0)
    expect(await spent(t)).toBeCloseTo(2 * whole.cost_usd, 15)
  })

  it('a compressed answer too (decoded for metering only)', async () => {
    const { t, upstream, whole } = await setUp()
    const g = gate()
    upstream.setResponder(() => halves(g.release, { encoding: 'gzip' }))
    const before = rows(t).length
    await callAndLeave(t)
    g.open()
    const row = await eventually(() => rows(t)[before])
    expect(row).toMatchObject({ status: 499, error: 'client_aborted', output_tokens: 353, cost_usd: whole.cost_usd, estimated: 0 })
  })

  it('one its client held back (its socket full) before leaving: read on all the same', async () => {
    const { whole } = await setUp()
    // The fixture's answer with its text made megabytes long: written as fast as it is taken until
    // the client has left, then its end. The client reads none of it, so Burnrate holds the upstream
    // back for it (undici paused) until it leaves.
    const answer = JSON.parse(ANSWER.toString('utf8'))
    const text = JSON.stringify(answer.choices[0].message.content).slice(1, -1)
    const [head, tail] = JSON.stringify({ ...answer, choices: [{ ...answer.choices[0], message: { ...answer.choices[0].message, content: '@@' } }] }).split('@@')
    const filler = Buffer.from(text.repeat(Math.ceil(65536 / text.length)))
    const left = gate()
    let gone = false
    void left.release.then(() => (gone = true))
    const big = http.createServer((req, res) => {
      req.resume()
      req.on('end', async () => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.write(head)
        while (!gone) if (!res.write(filler)) await Promise.race([once(res, 'drain'), left.release])
        res.end(tail)
      })
    })
    await new Promise<void>((r) => big.listen(0, '127.0.0.1', r))
    const t2 = await servers.server(CONFIG, `http://127.0.0.1:${(big.address() as AddressInfo).port}`)
    let answering: http.ServerResponse | undefined
    t2.server.http.on('request', (_req, res: http.ServerResponse) => (answering = res))
    try {
      await new Promise<void>((resolve) => {
        const req = http.request(`${t2.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, agent: false }, (res) => {
          res.once('data', () => {
            res.pause()
            // Burnrate's answer to it is full: the upstream is held back.
            void eventually(() => answering?.writableNeedDrain).then(() => {
              req.destroy()
              resolve()
            })
          })
        })
        req.end(BODY)
      })
      await eventually(async () => (await openConnections(t2.server.http)) === 0)
      left.open()
      const row = await eventually(() => rows(t2)[0])
      expect(row).toMatchObject({ status: 499, error: 'client_aborted', input_tokens: 1149, output_tokens: 353, cost_usd: whole.cost_usd, estimated: 0 })
    } finally {
      big.closeAllConnections()
      big.close()
    }
  })

  it('an upstream that then goes silent is not waited on past upstream.idle_timeout_ms: 499 at the estimate of what came', async () => {
    const { t, upstream } = await setUp()
    upstream.setResponder(() => halves(Promise.resolve(), { stallAfterChunks: 1 }))
    const before = rows(t).length
    await callAndLeave(t)
    const row = await eventually(() => rows(t)[before])
    expect(row).toMatchObject({ status: 499, error: 'client_aborted', estimated: 1 })
    expect(t.server.proxy.active).toBe(0)
  })

  it('a stop does not wait on it past its grace: recorded 499 with what came', async () => {
    // An idle timeout longer than the whole stop: the stop ends it, not the timeout.
    const { t, upstream } = await setUp({ ...CONFIG, upstream: { idle_timeout_ms: 600_000 } })
    // Never released: the answer's second half never comes.
    upstream.setResponder(() => halves(new Promise<void>(() => {})))
    const before = rows(t).length
    await callAndLeave(t)
    expect(t.server.proxy.active).toBe(1)
    await t.server.close(200)
    expect(rows(t)[before]).toMatchObject({ status: 499, error: 'client_aborted', estimated: 1 })
  })
})
