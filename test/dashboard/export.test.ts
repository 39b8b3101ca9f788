import http from 'node:http'
import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CALL_FIELDS } from '../../src/shared/api'
import { request } from '../support/http'
import { type TestServer, startTestServer } from '../support/server'
import { getJson, makeCall } from './seed'

let t: TestServer
const now = Date.now()
const TRICKY = [
  'plain',
  'comma, inside',
  'a "quoted" word',
  'line\nbreak',
  'crlf\r\nbreak',
  '"starts with a quote',
  'ends with a comma,',
  'ünïcødé ✓ 日本',
  '',
  ' spaced ',
  'semi;colon',
  ';=1+1',
  'tab\t=1+1',
]
const FORMULAS = ['=SUM(A1:A9)', '+1', '-2', '@cmd', '=HYPERLINK("http://x","y")']

beforeAll(async () => {
  t = await startTestServer({ timezone: 'UTC' })
  let i = 0
  for (const s of [...TRICKY, ...FORMULAS]) {
    t.server.ledger.record(
      makeCall({
        ts: now - 3_600_000 + i++ * 1000,
        agent: s,
        session: s,
        tenant: 'csv',
        model: s || 'm',
        cost_usd: 0.1 + i * 1e-7,
        latency_ms: 12.345,
        streamed: i % 2 === 0,
        estimated: i % 3 === 0,
        priced: i % 4 !== 0,
        response_id: s,
        source: i % 2 === 0 ? 'import' : 'proxy',
        billing: i % 3 === 0 ? 'subscription' : 'api',
        project: s,
        member: s,
      }),
    )
  }
})
afterAll(async () => {
  await t.cleanup()
})

describe('CSV export', () => {
  it('round-trips through a real CSV parser: same values as the JSON export, quoting commas, quotes and line breaks', async () => {
    const csv = await request(`${t.url}/api/dashboard/export?format=csv&tenant=csv`)
    expect(csv.status).toBe(200)
    expect(csv.text.endsWith('\r\n')).toBe(true)
    const rows: Record<string, string>[] = parse(csv.text, { columns: true })
    const json = (await getJson(`${t.url}/api/dashboard/export?format=json&tenant=csv`)).body.calls
    expect(rows).toHaveLength(TRICKY.length + FORMULAS.length)
    expect(Object.keys(rows[0])).toEqual([...CALL_FIELDS])
    rows.forEach((r, i) => {
      const j = json[i]
      for (const f of CALL_FIELDS) {
        const v = j[f]
        if (typeof v === 'number') expect(Number(r[f]), f).toBe(v)
        else if (typeof v === 'boolean') expect(r[f], f).toBe(String(v))
        else if (FORMULAS.includes(v)) expect(r[f], f).toBe("'" + v)
        else if (/[,;\t][=+\-@]/.test(v)) expect(r[f], f).toBe(v.replace(/([,;\t])([=+\-@])/g, "$1'$2"))
        else expect(r[f], f).toBe(v)
      }
    })
    // Money survives exactly: the CSV cost is the JSON cost, to the last digit.
    expect(rows.map((r) => r.cost_usd)).toEqual(json.map((c: any) => String(c.cost_usd)))
  })

  it('text a spreadsheet would run as a formula starts with an apostrophe; numbers never do', async () => {
    const csv = await request(`${t.url}/api/dashboard/export?format=csv&tenant=csv`)
    const rows: string[][] = parse(csv.text)
    const agents = rows.slice(1).map((r) => r[CALL_FIELDS.indexOf('agent')])
    for (const f of FORMULAS) expect(agents).toContain("'" + f)
    for (const r of rows.slice(1)) for (const i of [0, 8, 10, 15, 18]) expect(r[i]).toMatch(/^[0-9.e-]+$/)
  })

  it('a value holding a separator a spreadsheet may split on (; or tab) is quoted, so no part of it becomes a formula cell', async () => {
    const csv = await request(`${t.url}/api/dashboard/export?format=csv&tenant=csv`)
    expect(csv.text).toContain(`,";'=1+1",`)
    expect(csv.text).toContain(',"semi;colon",')
    expect(csv.text).toContain(`,"tab\t'=1+1",`)
    // Read as a ;-separated file (a German Excel), every line still splits into quoted or inert cells.
    const rows: string[][] = parse(csv.text, { delimiter: ';', relax_quotes: true, relax_column_count: true })
    for (const r of rows) for (const cell of r.slice(1)) expect(cell, cell).not.toMatch(/^[=+\-@]/)
  })

  it('an empty window is just the header row', async () => {
    const csv = await request(`${t.url}/api/dashboard/export?format=csv&tenant=nobody`)
    expect(csv.text).toBe(CALL_FIELDS.join(',') + '\r\n')
    expect(JSON.parse((await request(`${t.url}/api/dashboard/export?tenant=nobody`)).text)).toEqual({ calls: [] })
  })
})

describe('the download is named after the window exported', () => {
  const named = async (query: string) => {
    const r = await request(`${t.url}/api/dashboard/export?${query}`)
    expect(r.status).toBe(200)
    return r.headers['content-disposition']
  }
  it('the range, or the since/until asked for (a time without its colons)', async () => {
    expect(await named('format=csv&range=7d')).toBe('attachment; filename="burnrate-7d.csv"')
    expect(await named('format=csv&since=2026-11-01&until=2026-11-20')).toBe('attachment; filename="burnrate-2026-11-01-to-2026-11-20.csv"')
    expect(await named('since=2026-11-01')).toBe('attachment; filename="burnrate-from-2026-11-01.json"')
    expect(await named('format=csv&until=2026-11-20T18:30:00Z')).toBe('attachment; filename="burnrate-to-2026-11-20T183000Z.csv"')
    // since/until decide the window, so a range given with them names nothing.
    expect(await named('range=24h&since=2026-11-01T00:00%2B05:30&until=2026-11-02')).toBe(
      'attachment; filename="burnrate-2026-11-01T0000+0530-to-2026-11-02.json"',
    )
  })
})

describe('streaming', () => {
  const N = 25_000
  beforeAll(() => {
    for (let i = 0; i < N; i++) t.server.ledger.record(makeCall({ ts: now - 86_400_000 + i * 1000, tenant: 'big', cost_usd: i * 1e-6, session: `s${i % 7}` }))
    t.server.ledger.flush()
  })

  it('streams every call, oldest first, to a slow reader, while the ledger keeps writing', async () => {
    const received: Buffer[] = []
    let paused = 0
    await new Promise<void>((resolve, reject) => {
      http
        .get(`${t.url}/api/dashboard/export?format=json&tenant=big`, (res) => {
          expect(res.headers['content-length']).toBeUndefined()
          res.on('data', (c: Buffer) => {
            received.push(c)
            if (paused < 5) {
              // Stop reading for a moment; the server must wait, not buffer everything or drop rows.
              paused++
              res.pause()
              // A call recorded mid-export is written by the ledger (the export holds no open statement).
              t.server.ledger.record(makeCall({ tenant: 'during' }))
              expect(t.server.ledger.flush()).toBe(true)
              setTimeout(() => res.resume(), 50)
            }
          })
          res.on('end', resolve)
          res.on('error', reject)
        })
        .on('error', reject)
    })
    const calls = JSON.parse(Buffer.concat(received).toString('utf8')).calls
    expect(calls).toHaveLength(N)
    for (let i = 1; i < calls.length; i++) expect(Date.parse(calls[i].t)).toBeGreaterThanOrEqual(Date.parse(calls[i - 1].t))
    expect(new Set(calls.map((c: any) => c.id)).size).toBe(N)
    expect((await getJson(`${t.url}/api/dashboard/export?tenant=during`)).body.calls).toHaveLength(5)
  })

  it('a client that leaves mid-export costs nothing: the server and the ledger go on', async () => {
    await new Promise<void>((resolve, reject) => {
      const req = http.get(`${t.url}/api/dashboard/export?format=csv&tenant=big`, (res) => {
        res.once('data', () => {
          req.destroy()
          resolve()
        })
      })
      req.on('error', (e: any) => (e.code === 'ECONNRESET' ? resolve() : reject(e)))
    })
    t.server.ledger.record(makeCall({ tenant: 'after' }))
    const after = await getJson(`${t.url}/api/dashboard/export?tenant=after`)
    expect(after.body.calls).toHaveLength(1)
    const csv = await request(`${t.url}/api/dashboard/export?format=csv&tenant=big`)
    expect(parse(csv.text, { columns: true })).toHaveLength(N)
  })
})
