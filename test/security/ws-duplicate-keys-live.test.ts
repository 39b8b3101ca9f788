import { describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { LIVE_PATH, openSocket, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * A Gemini Live `setup` that names its model twice (`{"setup":{"model":"models/gemini-2.5-pro",
 * "model":"models/gemini-2.0-flash-lite"}}`): JSON.parse reads the last, a parser upstream may
 * read the first, so the socket's turns were priced (and scoped by model rules) at a model the
 * upstream did not run. Such a setup is refused now: the client's socket is closed with 1007
 * (as Google closes one on a setup it refuses), and the setup is not sent upstream.
 *
 * The upstream here reads a setup's first model, as such a parser does, and answers a turn.
 */

const got: string[] = []
const usage = { promptTokenCount: 1000, responseTokenCount: 1000, totalTokenCount: 2000, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 1000 }], responseTokensDetails: [{ modality: 'TEXT', tokenCount: 1000 }] }

const s = serverOverWsUpstream({
  onConnection: (ws) => {
    ws.on('message', (data) => {
      const text = String(data)
      got.push(text)
      if (!JSON.parse(text).setup) return
      ws.send(Buffer.from(JSON.stringify({ setupComplete: {} })), { binary: true })
      ws.send(Buffer.from(JSON.stringify({ serverContent: { modelTurn: { parts: [{ text: 'Hello' }] } } })), { binary: true })
      ws.send(Buffer.from(JSON.stringify({ serverContent: { turnComplete: true }, usageMetadata: usage })), { binary: true })
    })
  },
})

describe('a Gemini Live setup naming its model twice', () => {
  it('closes the client’s socket with 1007 and is not sent upstream', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await openSocket(s.t, `${LIVE_PATH}?key=AIza-dup-live-0001`)
    c.ws.send('{"setup":{"model":"models/gemini-2.5-pro","generationConfig":{"responseModalities":["TEXT"]},"model":"models/gemini-2.0-flash-lite"}}')
    const closed = await Promise.race([c.closed, eventually(() => ledgerRows(s.t.dbFile).length > before).then(() => null)])
    expect(closed?.code, `recorded as ${JSON.stringify(ledgerRows(s.t.dbFile).slice(before).map((r: any) => r.model))} while the upstream ran gemini-2.5-pro`).toBe(1007)
    expect(closed?.reason).toMatch(/model/)
    expect(got).toEqual([])
    expect(ledgerRows(s.t.dbFile).length).toBe(before)
  })

  it('a setup naming it once goes upstream, and its turn is priced at that model', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await openSocket(s.t, `${LIVE_PATH}?key=AIza-dup-live-0002`)
    c.ws.send(JSON.stringify({ setup: { model: 'models/gemini-2.5-pro', generationConfig: { responseModalities: ['TEXT'] } } }))
    const rows = (await eventually(() => {
      const r = ledgerRows(s.t.dbFile).slice(before)
      return r.length === 1 ? r : undefined
    }, 10_000)) as any[]
    expect(rows[0].model).toBe('gemini-2.5-pro')
    c.ws.close()
  })

  it('a setup whose key is spelled with a JSON escape is read as the upstream reads it: priced at its model, not unpriced', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const c = await openSocket(s.t, `${LIVE_PATH}?key=AIza-dup-live-0003`)
    c.ws.send('{"set\\u0075p":{"model":"models/gemini-2.5-pro","generationConfig":{"responseModalities":["TEXT"]}}}')
    const rows = (await eventually(() => {
      const r = ledgerRows(s.t.dbFile).slice(before)
      return r.length === 1 ? r : undefined
    }, 10_000)) as any[]
    expect(rows[0].model).toBe('gemini-2.5-pro')
    expect(rows[0].cost_usd).toBeGreaterThan(0)
    c.ws.close()
  })
})
