import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { readSpill, spillFiles } from '../../src/main/reliability/spill'
import { lockFromAnotherProcess } from '../load/harness'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')

const children = new Set<ChildProcess>()
afterAll(() => {
  // A test that failed before stopping its server must not leave it running.
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
})

/** The headless entry as `npm start` runs it: the built bundle under plain Node. */
function startCli(args: string[], env: NodeJS.ProcessEnv = {}): { child: ChildProcess; url: Promise<string>; stderr: () => string; exit: Promise<number> } {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let err = ''
  const url = new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d) => {
      err += d
      const m = /listening on (http:\/\/\S+)/.exec(err)
      if (m) resolve(m[1])
    })
    child.on('exit', () => reject(new Error(`exited: ${err}`)))
  })
  url.catch(() => {}) // tests that expect an early exit never await the URL
  const exit = new Promise<number>((r) => child.on('exit', (code) => r(code ?? -1)))
  return { child, url, stderr: () => err, exit }
}

beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
})

describe('the headless entry', () => {
  let upstream: MockUpstream
  let dir: string
  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: fixture('openai-chat/chat-nonstream-cached.json'),
    }))
    dir = mkdtempSync(join(tmpdir(), 'burnrate-cli-'))
  })
  afterAll(async () => {
    await upstream.close()
    rmSync(dir, { recursive: true, force: true })
  })

  // SIGHUP: the terminal or ssh session it runs in closed.
  it.each(['SIGTERM', 'SIGHUP'] as const)('serves, and flushes every call to disk on %s', async (signal) => {
    const data = mkdtempSync(join(dir, 'signal-'))
    const cfg = join(data, 'cfg.yaml')
    writeFileSync(cfg, `providers:\n  openai:\n    base_url: ${upstream.url}/v1\n`)
    const cli = startCli(['--config', cfg, '--data-dir', data, '--port', '0'])
    const url = await cli.url
    for (let i = 0; i < 20; i++) await postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini' })
    cli.child.kill(signal)
    expect(await cli.exit).toBe(0)
    expect(cli.stderr()).toContain(`${signal}: finishing calls under way and flushing the ledger`)
    expect(existsSync(join(data, 'server.lock'))).toBe(false)
    const db = new Database(join(data, 'burnrate.db'), { readonly: true })
    expect((db.prepare('SELECT COUNT(*) AS n FROM calls').get() as any).n).toBe(20)
    db.close()
  })

  it('on a second SIGTERM while the database is locked, keeps the waiting calls in a spill file before exiting', async () => {
    // The first stop waits for a call under way (its answer stalls); the second cannot wait: it
    // cuts that call. The calls already answered were waiting for the locked database: they went
    // with the process before spill files, and the cut one before builds that record it.
    const stalling = await startMockUpstream((req) =>
      JSON.parse(req.body.toString()).model === 'gpt-stall'
        ? { status: 200, headers: { 'content-type': 'application/json' }, chunks: [Buffer.from('{"id":'), Buffer.from('"x"}')], stallAfterChunks: 1 }
        : { status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') },
    )
    const data = mkdtempSync(join(dir, 'second-signal-'))
    const cfg = join(data, 'cfg.yaml')
    writeFileSync(cfg, `providers:\n  openai:\n    base_url: ${stalling.url}/v1\n`)
    const cli = startCli(['--config', cfg, '--data-dir', data, '--port', '0'])
    const url = await cli.url
    const lock = await lockFromAnotherProcess(join(data, 'burnrate.db'))
    try {
      for (let i = 0; i < 3; i++) expect((await postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini' })).status).toBe(200)
      const stalled = postJson(`${url}/v1/chat/completions`, { model: 'gpt-stall' }).catch(() => null)
      await eventually(() => stalling.requests.some((r) => r.body.toString().includes('gpt-stall')))
      cli.child.kill('SIGTERM')
      await eventually(() => cli.stderr().includes('SIGTERM: finishing calls under way'))
      cli.child.kill('SIGTERM')
      expect(await cli.exit).toBe(1)
      await stalled
      expect(cli.stderr()).toContain('SIGTERM again: exiting without waiting')
      // The 3 answered, and the stalled one, cut by the second signal (builds before this one lost it).
      expect(cli.stderr()).toMatch(/database is locked\); 4 call\(s\) kept in .*ledger-spill-\d+\.jsonl until the next start/)
      const files = spillFiles(data)
      expect(files).toHaveLength(1)
      expect(readSpill(files[0]).map((c) => [c.status, c.error ?? null])).toEqual([[200, null], [200, null], [200, null], [503, 'burnrate_stopped']])
    } finally {
      await lock.release()
      await stalling.close()
    }
  })

  it('stops on a bad config with a one-line message naming the file, key and expectation', async () => {
    const cfg = join(dir, 'bad.yaml')
    writeFileSync(cfg, 'server:\n  port: "http"\n')
    const cli = startCli(['--config', cfg, '--data-dir', dir])
    expect(await cli.exit).toBe(1)
    const lines = cli.stderr().trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(cfg)
    expect(lines[0]).toContain('server.port')
    expect(lines[0]).toContain('expected number')
  })

  it('says in one line that the port is taken', async () => {
    const blocker = http.createServer()
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r))
    const port = (blocker.address() as any).port
    try {
      const cli = startCli(['--data-dir', dir, '--port', String(port)])
      expect(await cli.exit).toBe(1)
      expect(cli.stderr().trim()).toBe(`burnrate: 127.0.0.1:${port} is already in use; stop what is using it or start with --port <n>`)
    } finally {
      blocker.close()
    }
  })

  it('refuses a Node older than 22 with one line', () => {
    const old = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => {
      try {
        return Number(execFileSync(p, ['-p', 'process.versions.node.split(".")[0]']).toString()) < 22
      } catch {
        return false
      }
    })
    if (!old) {
      console.warn('no Node older than 22 on this machine: the version check was not exercised')
      return
    }
    let stderr = ''
    try {
      execFileSync(old, [CLI, '--data-dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] })
    } catch (err: any) {
      stderr = err.stderr.toString()
      expect(err.status).toBe(1)
    }
    expect(stderr.trim().split('\n')).toHaveLength(1)
    expect(stderr).toContain('Node.js 22 or newer is required')
  })
})
