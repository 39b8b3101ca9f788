import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { StartupError } from '../../src/main/server/server'
import { listeningUrl } from '../support/child'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { startTestServer } from '../support/server'

/**
 * One server per data folder (README: Configuration). Each server meters budgets in memory from
 * what it loaded at start-up: two on one folder would each admit a block rule's whole limit.
 */

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')

let dir: string
const children: ChildProcess[] = []
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'burnrate-lock-'))
})
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

const lockFile = () => join(dir, 'server.lock')
const lock = () => JSON.parse(readFileSync(lockFile(), 'utf8')) as { pid: number; url: string; started_at: string }

/** A process that only waits: a live pid that is not this one. */
function otherProcess(): ChildProcess {
  const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
  children.push(c)
  return c
}

describe('the data folder lock, in the server core', () => {
  it('is held while the server runs (pid and address, owner-only) and removed when it stops', async () => {
    const t = await startTestServer({}, undefined, dir)
    try {
      expect(lock()).toMatchObject({ pid: process.pid, url: t.url })
      if (process.platform !== 'win32') expect(statSync(lockFile()).mode & 0o777).toBe(0o600)
    } finally {
      await t.stop()
    }
    expect(existsSync(lockFile())).toBe(false)
  })

  it('refuses to start while another live process holds it, naming its pid and address', async () => {
    const other = otherProcess()
    writeFileSync(lockFile(), JSON.stringify({ pid: other.pid, url: 'http://127.0.0.1:8787', started_at: new Date().toISOString(), claim: 'x' }))
    const started = startTestServer({}, undefined, dir)
    await expect(started).rejects.toThrow(StartupError)
    await expect(started).rejects.toThrow(`another Burnrate (pid ${other.pid}) serves this data folder ${dir} at http://127.0.0.1:8787; stop it or use another --data-dir`)
    // Its lock is left as it was.
    expect(lock().pid).toBe(other.pid)
  })

  it('takes over a lock whose pid another process has now (given out again after a crash), where start times can be read', async () => {
    const other = otherProcess()
    // The lock's writer started at another time than the process that has its pid now.
    writeFileSync(lockFile(), JSON.stringify({ pid: other.pid, url: 'http://127.0.0.1:8787', started_at: new Date().toISOString(), claim: 'x', proc_start: '1' }))
    if (!existsSync(`/proc/${other.pid}/stat`)) return // no start times here: a live pid is taken as the writer (the test above)
    const t = await startTestServer({}, undefined, dir)
    try {
      expect(lock()).toMatchObject({ pid: process.pid, url: t.url })
    } finally {
      await t.stop()
    }
  })

  it('takes over a lock whose process is gone (a crash, a kill)', async () => {
    const gone = otherProcess()
    const pid = gone.pid!
    await new Promise((r) => {
      gone.once('exit', r)
      gone.kill('SIGKILL')
    })
    writeFileSync(lockFile(), JSON.stringify({ pid, url: 'http://127.0.0.1:8787', started_at: new Date().toISOString(), claim: 'x' }))
    const t = await startTestServer({}, undefined, dir)
    try {
      expect(lock()).toMatchObject({ pid: process.pid, url: t.url })
    } finally {
      await t.stop()
    }
  })
})

describe('two `burnrate` servers on one data folder (the built CLI)', () => {
  let upstream: MockUpstream
  beforeAll(async () => {
    if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
    upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
  })
  afterAll(async () => {
    await upstream.close()
  })

  const env = { ...process.env, BURNRATE_PRICE_AUTO_UPDATE: 'false', BURNRATE_CONFIG: '', BURNRATE_PORT: '', BURNRATE_DATA_DIR: '' }

  it('the second refuses in one line naming the first; the block rule admits its limit once; report --local works beside it', async () => {
    const cfg = join(dir, 'cfg.yaml')
    // A limit below one call's cost: the first call of the day is admitted, every later one refused.
    writeFileSync(cfg, `providers:\n  openai:\n    base_url: ${upstream.url}/v1\nbudgets:\n  rules:\n    - { api_key_pattern: "sk-*", daily_limit_usd: 0.0000001, action: block }\n`)
    const args = [CLI, '--config', cfg, '--data-dir', dir, '--port', '0']
    const a = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    children.push(a)
    const urlA = await listeningUrl(a).url

    const b = spawnSync(process.execPath, args, { env, encoding: 'utf8', timeout: 60_000 })
    expect({ code: b.status, stderr: b.stderr.trim() }).toEqual({
      code: 1,
      stderr: `burnrate: another Burnrate (pid ${a.pid}) serves this data folder ${dir} at ${urlA}; stop it or use another --data-dir (if no Burnrate runs, delete ${lockFile()})`,
    })

    const key = { authorization: 'Bearer sk-dev-1' }
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }
    const statuses = [(await postJson(`${urlA}/v1/chat/completions`, body, key)).status, (await postJson(`${urlA}/v1/chat/completions`, body, key)).status]
    expect({ statuses, upstreamCalls: upstream.requests.length }).toEqual({ statuses: [200, 429], upstreamCalls: 1 })

    // The CLI's readers do not take the lock: they keep working beside the server.
    const report = spawnSync(process.execPath, [CLI, 'report', 'daily', '--local', '--json', '--no-import', '--data-dir', dir, '--config', cfg], { env, encoding: 'utf8', timeout: 60_000 })
    expect(report.status, report.stderr).toBe(0)
    expect(lock().pid).toBe(a.pid)
  })
})
