import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT } from '../e2e/browser'
import { startLedger } from '../support/cli'
import { listeningUrl } from '../support/child'

/**
 * Where the CLI's numbers come from, and where they go: an explicit `--url` that answers but not
 * as a Burnrate is a failure (not the local file's numbers, exit 0); a Burnrate that holds the
 * data folder but is too busy to answer still makes the local read leave fresh log entries for
 * later (it may be recording the same answers); and output that cannot be written (a full disk)
 * is a failure, as `-o` already was.
 */

const CLI = join(ROOT, 'out/main/cli.js')
let base: string

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'burnrate-cli-target-'))
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

/** Runs the built CLI in its own process (this one keeps serving the stubs meanwhile): its exit code and output. */
function run(args: string[], home: string, stdout: 'pipe' | number = 'pipe'): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, HOME: home, CI: 'true', CLAUDE_CONFIG_DIR: join(home, '.claude') }, stdio: ['ignore', stdout, 'pipe'] })
  let out = ''
  let err = ''
  child.stdout?.on('data', (d: Buffer) => (out += d))
  child.stderr!.on('data', (d: Buffer) => (err += d))
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout: out, stderr: err })))
}

describe('--url that answers, but not as a Burnrate', () => {
  let stub: http.Server
  let url: string
  beforeAll(async () => {
    // A Burnrate at server.max_connections answers 503; a reverse proxy that wants credentials, 401.
    stub = http.createServer((req, res) => {
      const status = req.url?.startsWith('/auth') ? 401 : 503
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { type: status === 401 ? 'unauthorized' : 'service_unavailable', message: 'busy' } }))
    })
    await new Promise<void>((r) => stub.listen(0, '127.0.0.1', () => r()))
    url = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise((r) => stub.close(r)))

  it.each([['503', ''], ['401', '/auth']])('answering %s: status fails with exit 1 instead of reading the local ledger', async (_status, path) => {
    const home = mkdtempSync(join(base, 'home-'))
    const r = await run(['status', '--no-import', '--url', url + path, '--data-dir', join(home, 'data')], home)
    expect(r.stdout).not.toContain('ledger file')
    expect(r.stderr).toContain('did not answer as a Burnrate')
    expect(r.status).toBe(1)
  })
})

describe('--url of a Burnrate slow to answer (busy, or across a network)', () => {
  let stub: http.Server
  let url: string
  beforeAll(async () => {
    // Its health answers after 1.5 s; every other path answers an error the CLI will quote.
    stub = http.createServer((req, res) => {
      const send = () => {
        const health = req.url === '/api/health'
        res.writeHead(health ? 200 : 500, { 'content-type': 'application/json' })
        res.end(JSON.stringify(health ? { status: 'ok' } : { error: { type: 'internal', message: 'the slow one answered' } }))
      }
      if (req.url === '/api/health') setTimeout(send, 1500)
      else send()
    })
    await new Promise<void>((r) => stub.listen(0, '127.0.0.1', () => r()))
    url = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise((r) => stub.close(r)))

  it('is still the one asked: its health has more than a second (no "no Burnrate answers")', async () => {
    const home = mkdtempSync(join(base, 'home-'))
    const r = await run(['status', '--no-import', '--url', url, '--data-dir', join(home, 'data')], home)
    expect(r.stderr).not.toContain('no Burnrate answers')
    expect(r.stderr).toContain('the slow one answered')
    expect(r.status).toBe(1)
  })
})

describe('output that cannot be written', () => {
  it('`export > /dev/full` exits 1 and says why, as `-o /dev/full` does', async () => {
    const home = mkdtempSync(join(base, 'home-'))
    const data = join(home, 'data')
    startLedger(data) // a data folder named that holds no ledger is refused
    const viaO = await run(['export', '--local', '--data-dir', data, '-o', '/dev/full'], home)
    expect(viaO.stderr).toContain('ENOSPC')
    expect(viaO.status).toBe(1)
    const fd = openSync('/dev/full', 'w')
    try {
      const viaStdout = await run(['export', '--local', '--data-dir', data], home, fd)
      expect(viaStdout.stderr).toContain('ENOSPC')
      expect(viaStdout.status).toBe(1)
    } finally {
      closeSync(fd)
    }
  })
})

describe('a Burnrate that holds the data folder but does not answer', () => {
  let server: ChildProcess | undefined
  afterAll(() => {
    if (server && server.exitCode === null) {
      server.kill('SIGCONT')
      server.kill('SIGKILL')
    }
  })

  it('report reads the file and leaves log entries younger than 10 minutes for later', async () => {
    const home = mkdtempSync(join(base, 'home-'))
    const data = join(home, 'data')
    server = spawn(process.execPath, [CLI, 'serve', '--data-dir', data, '--port', '0'], {
      env: { ...process.env, HOME: home, CI: 'true', CLAUDE_CONFIG_DIR: join(home, '.claude') },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    await listeningUrl(server).url
    // A Claude Code answer logged just now: the server may still be recording it.
    const dir = join(home, '.claude', 'projects', '-home-dev-live')
    mkdirSync(dir, { recursive: true })
    writeFileSync(
      join(dir, 'live-1.jsonl'),
      JSON.stringify({
        cwd: '/home/dev/live', sessionId: 'live-1', type: 'assistant', uuid: 'l-1', requestId: 'req_live1', timestamp: new Date().toISOString(),
        message: { id: 'msg_live1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [], stop_reason: 'end_turn', usage: { input_tokens: 1000, output_tokens: 500 } },
      }) + '\n',
    )
    // Frozen (a busy event loop): it holds the folder but answers no health check.
    server.kill('SIGSTOP')
    const r = await run(['report', 'daily', '--data-dir', data], home)
    // status reads the file too, and says why: that server did not answer (not that none runs).
    const frozen = await run(['status', '--no-import', '--data-dir', data], home)
    server.kill('SIGCONT')
    expect(frozen.status, frozen.stderr).toBe(0)
    expect(frozen.stdout).toMatch(/^Burnrate \(ledger file; the Burnrate at http:\/\/127\.0\.0\.1:\d+ serves this folder but did not answer\)$/m)
    expect(r.status, r.stderr).toBe(0)
    expect(r.stderr).not.toContain('imported')
    expect(r.stdout).toContain('No calls')
    // Answering again: `status --local` says which Burnrate serves the folder, not "no server running".
    const url = (await run(['status', '--json', '--data-dir', data, '--no-import'], home)).stdout
    const local = await run(['status', '--local', '--no-import', '--data-dir', data], home)
    expect(local.status, local.stderr).toBe(0)
    expect(local.stdout).toContain(`Burnrate (ledger file, read with --local; the Burnrate at ${JSON.parse(url).source} serves this folder)`)
    expect(local.stdout).toContain('Budgets     shown by a running Burnrate (without --local)')
  }, 90_000)
})
