import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emptyUsage } from '../../src/main/metering/usage'
import { Pricer } from '../../src/main/pricing/price'
import { PriceUpdater } from '../../src/main/pricing/update'

const usage = { ...emptyUsage(), input_tokens: 1_000_000, output_tokens: 100_000 }

/** What the price-data server does with the next request. */
let serve: (res: http.ServerResponse) => void = () => {}

describe('the price-data server', () => {
  let server: http.Server
  let url = ''
  const dirs: string[] = []
  const newDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'burnrate-prices-'))
    dirs.push(d)
    return d
  }
  beforeAll(async () => {
    server = http.createServer((_req, res) => serve(res))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/data.json`
  })
  afterAll(async () => {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })

  it('sending its answer a byte at a time is cut off at the time limit (undici restarts its own timeouts at each byte), and the data in use stays', async () => {
    let cut = false
    serve = (res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      // A byte every 50 ms, for as long as the client listens: never a 1-second pause.
      const timer = setInterval(() => res.write(' '), 50)
      res.on('close', () => {
        clearInterval(timer)
        cut = true
      })
    }
    const pricer = new Pricer()
    await pricer.ready()
    const u = new PriceUpdater({ dataDir: newDir(), url, autoUpdate: true, timeoutMs: 1_000, onChange: () => pricer.dataChanged() })
    // Before, this never resolved: the fetch held on, and so did every later check (each waits for the one before).
    expect(await u.update()).toBe(false)
    expect(u.status()).toMatchObject({ source: 'bundled', last_error: 'the download took longer than 1000 ms' })
    await expect.poll(() => cut).toBe(true)
    expect(await u.cached()).toBe(false)
    expect(pricer.price('openai', 'openai', 'gpt-4o-mini', usage, new Date()).priced).toBe(true)
  }, 30_000)
})
