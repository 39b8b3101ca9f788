import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { LIVE_PATH, openSocket, rowsAfter, serverOverWsUpstream } from '../support/ws-sessions'

/**
 * A metered socket's path with trailing slashes (`/v1/realtime/`, `/v1/responses//`) is the same
 * socket to the budgets and the meters, as the same HTTP paths are: before, a key blocked at $0
 * had its Realtime or Gemini Live socket opened unchecked, and a Codex socket's responses went
 * through unmetered, by adding a slash.
 */

/** Every socket the upstream accepted, with the frames it got. */
const seen: { url: string; frames: string[] }[] = []
const rules = [
  { api_key_pattern: 'sk-blocked-*', daily_limit_usd: 0, action: 'block' },
  { api_key_pattern: 'AIza-blocked-*', daily_limit_usd: 0, action: 'block' },
]
const s = serverOverWsUpstream(
  {
    onConnection: (ws, req) => {
      const me = { url: req.url ?? '', frames: [] as string[] }
      seen.push(me)
      ws.on('message', (d) => me.frames.push(String(d)))
    },
  },
  { budgets: { rules } },
)

/** The HTTP status an upgrade was answered with (101 when it opened). */
function upgradeStatus(path: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${s.t.url.replace('http', 'ws')}${path}`, { headers })
    ws.on('unexpected-response', (_req, res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    ws.on('open', () => {
      ws.terminate()
      resolve(101)
    })
    ws.on('error', () => {})
  })
}

describe('a metered socket path with trailing slashes', () => {
  it.each(['/v1/realtime/?model=gpt-realtime', '/v1/realtime//?model=gpt-realtime'])('Realtime %s: a key over its block limit is refused the socket, recorded, the upstream never asked', async (path) => {
    const before = ledgerRows(s.t.dbFile).length
    const sockets = seen.length
    expect(await upgradeStatus(path, { authorization: 'Bearer sk-blocked-slash-0001' })).toBe(429)
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ endpoint: 'realtime', status: 429, error: 'budget_exceeded', cost_usd: 0 })
    expect(seen.length).toBe(sockets)
  })

  it('Gemini Live with a trailing slash: a key over its block limit is refused the socket, recorded, the upstream never asked', async () => {
    const before = ledgerRows(s.t.dbFile).length
    const sockets = seen.length
    expect(await upgradeStatus(`${LIVE_PATH}/?key=AIza-blocked-slash-0002`)).toBe(429)
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ provider: 'gemini', endpoint: 'live', status: 429, error: 'budget_exceeded', cost_usd: 0 })
    expect(seen.length).toBe(sockets)
  })

  it("Codex's Responses socket at /v1/responses/: a blocked key's response.create is refused with an error frame and recorded, never sent upstream", async () => {
    const before = ledgerRows(s.t.dbFile).length
    const { ws, frames } = await openSocket(s.t, '/v1/responses/', { headers: { authorization: 'Bearer sk-blocked-slash-0003', 'user-agent': 'codex_cli_rs/0.171.0 (Linux; x86_64) xterm', originator: 'codex_cli_rs' } })
    const sockets = seen.length
    ws.send(JSON.stringify({ type: 'response.create', model: 'gpt-4o-mini', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'too dear' }] }] }))
    await eventually(() => frames.length === 1, 10_000)
    expect(frames[0]).toMatchObject({ type: 'error', status: 429, error: { code: 'budget_exceeded' } })
    ws.close()
    const [row] = await rowsAfter(s.t, before, 1)
    expect(row).toMatchObject({ endpoint: 'responses', status: 429, error: 'budget_exceeded', cost_usd: 0 })
    expect(seen[sockets - 1].frames).toEqual([])
  })
})
