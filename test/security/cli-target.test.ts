import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { type Server, createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCliCaptured, startLedger } from '../support/cli'

/**
 * While Burnrate is stopped, anyone on the machine may listen on its port. The CLI asks a server
 * over HTTP only when it is the one serving the data folder (or the one at --url): an impostor on
 * the configured port gets no dashboard token and cannot show its own numbers.
 */
const TOKEN = 'Victim-Dashboard-Token-5f1e9a27c3d8'
let impostor: Server
let port: number
const seen: string[] = []
let dir: string
beforeAll(async () => {
  impostor = createServer((req, res) => {
    seen.push(`${req.url} ${req.headers.authorization ?? ''}`)
    res.setHeader('content-type', 'application/json')
    res.end(req.url === '/api/health' ? '{"status":"ok","version":"9.9.9"}' : '{"today_usd":4242,"today_requests":1}')
  })
  await new Promise<void>((r) => impostor.listen(0, '127.0.0.1', r))
  port = (impostor.address() as { port: number }).port
  dir = mkdtempSync(join(tmpdir(), 'burnrate-cli-target-'))
  writeFileSync(join(dir, 'config.yaml'), `server:\n  port: ${port}\ndashboard:\n  token: ${TOKEN}\n`)
  startLedger(dir) // a data folder named that holds no ledger is refused
})
afterAll(async () => {
  await new Promise((r) => impostor.close(r))
  rmSync(dir, { recursive: true, force: true })
})

describe('the CLI and whatever listens on the configured port', () => {
  it('status reads the ledger file, not the listener, when no Burnrate serves the data folder: the listener gets nothing', async () => {
    const r = await runCliCaptured('status', '--data-dir', dir, '--config', join(dir, 'config.yaml'), '--no-import', '--json')
    expect(r.code, r.out).toBe(0)
    expect(seen).toEqual([])
    expect(r.out).not.toContain('4242')
  })

  it('with --url it is the user who named the server: it is asked, with the token', async () => {
    const r = await runCliCaptured('status', '--data-dir', dir, '--config', join(dir, 'config.yaml'), '--url', `http://127.0.0.1:${port}`, '--json')
    expect(seen).toContain(`/api/health `)
    expect(seen.some((s) => s.endsWith(`Bearer ${TOKEN}`))).toBe(true)
    expect(r.out.length).toBeGreaterThan(0)
  })
})
