import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { CLI, ROOT } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { makePrivateCa } from '../network/support'

// The built headless server (out/main/cli.js) with a private CA (`upstream.ca_file`), so its own
// calls out go through a dispatcher it closes at the stop, stopped while the price update is
// downloading from a host that sends its data a byte at a time: the stop must not wait for it.

let upstream: MockUpstream
let prices: http.Server
let priceUrl = ''
let asked = 0
const trickles = new Set<NodeJS.Timeout>()
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  prices = http.createServer((_req, res) => {
    asked++
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write('{')
    // A byte every 200 ms: the body timeout (between bytes) never fires.
    const t = setInterval(() => res.write(' '), 200)
    trickles.add(t)
    res.on('close', () => clearInterval(t))
  })
  await new Promise<void>((r) => prices.listen(0, '127.0.0.1', r))
  priceUrl = `http://127.0.0.1:${(prices.address() as AddressInfo).port}/prices.json`
})
afterAll(async () => {
  for (const t of trickles) clearInterval(t)
  prices.closeAllConnections()
  await new Promise<void>((r) => prices.close(() => r()))
  await upstream.close()
})

describe('a stop while the price update downloads (upstream.ca_file set)', () => {
  it('SIGTERM exits without waiting for the download to end', async () => {
    const ca = makePrivateCa()
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-stop-prices-'))
    let child: ChildProcess | null = null
    try {
      const cfg = join(dir, 'config.yaml')
      writeFileSync(cfg, stringify({ timezone: 'UTC', server: { port: 0 }, upstream: { ca_file: ca.caFile }, pricing: { update_url: priceUrl }, providers: { openai: { base_url: `${upstream.url}/v1` } } }))
      const env = { ...process.env }
      delete env.BURNRATE_PRICE_AUTO_UPDATE
      child = spawn(process.execPath, [CLI, '--config', cfg, '--data-dir', dir], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] })
      let err = ''
      child.stderr!.on('data', (d) => (err += d))
      const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)))
      const url = await eventually(() => /listening on (http:\/\/\S+)/.exec(err)?.[1])
      // A call loads the prices; the update starts 10 s later.
      expect((await postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini' }, { authorization: 'Bearer sk-stop-prices-0001' })).status).toBe(200)
      await eventually(() => asked > 0, 30_000)
      child.kill('SIGTERM')
      // Before, the stop waited for the download (the private CA's dispatcher closing gracefully): forever here.
      expect(await exited).toBe(0)
      expect(err).not.toContain('could not update')
    } finally {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
      rmSync(ca.dir, { recursive: true, force: true })
    }
  }, 60_000)
})
