import WebSocket from 'ws'

/**
 * Codex's Responses WebSocket upgrade to the proxy at `url` (`/v1/responses`, a bearer key), for
 * the tests of an upgrade that stalls: `done` ends the wait; if it is not called within
 * `giveUpMs`, the socket is terminated and `gaveUp` called.
 */
export function responsesUpgrade(url: string, giveUpMs: number, gaveUp: () => void): { ws: WebSocket; done(): void } {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: 'Bearer sk-test' } })
  const giveUp = setTimeout(() => {
    ws.terminate()
    gaveUp()
  }, giveUpMs)
  ws.on('error', () => {})
  return { ws, done: () => clearTimeout(giveUp) }
}

/** How a WebSocket upgrade was answered: its status and JSON body, or `gaveUp` when no answer came in time. */
export interface UpgradeAnswer {
  status?: number
  body?: any
  gaveUp?: boolean
}

/**
 * The upgrade's answer: a refusal's status and JSON body once it has ended, 101 if it opens (then
 * closed), or `gaveUp` when nothing came within `giveUpMs`.
 */
export function upgrade(url: string, giveUpMs = 20_000): Promise<UpgradeAnswer> {
  return new Promise((resolve) => {
    const { ws, done } = responsesUpgrade(url, giveUpMs, () => resolve({ gaveUp: true }))
    ws.on('unexpected-response', (_req, res) => {
      let text = ''
      res.on('data', (c) => (text += c))
      res.on('end', () => {
        done()
        resolve({ status: res.statusCode, body: JSON.parse(text) })
      })
    })
    ws.on('open', () => {
      done()
      ws.terminate()
      resolve({ status: 101 })
    })
  })
}
