import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listeningUrl } from '../support/child'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { STARTUP_BUILTINS } from '../../src/main/server/startup-tiering'

/**
 * The built headless server starts without V8's optimizing compiler (TurboFan), whose first use
 * pages about 5 MiB of its code into the idle process, and turns it back on once it listens, so
 * that the calls' hot code is optimized as before. V8's own trace of its compilations
 * (`--trace-opt`, written to a file and flushed at every entry) shows both: nothing reached
 * TurboFan by the time the server listens (without the hold, module resolution's path helper
 * does), and calls get TurboFan-compiled code. And Node's built-in modules that start-up loads
 * still use the code cache built into Node, which V8 refuses once its flags differ.
 */
const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')

let dir: string
let upstream: MockUpstream
const children = new Set<ChildProcess>()

beforeAll(async () => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
  dir = mkdtempSync(join(tmpdir(), 'burnrate-tiering-'))
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
})
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  await upstream?.close()
  rmSync(dir, { recursive: true, force: true })
})

const TURBOFAN = /\(target TURBOFAN/

describe('TurboFan is held while the headless server starts', () => {
  it('nothing is TurboFan-compiled before the server listens; proxied calls are, afterwards', async () => {
    const cfg = join(dir, 'config.yaml')
    const trace = join(dir, 'trace.log')
    writeFileSync(cfg, `server: {host: 127.0.0.1, port: 0}\nproviders: {openai: {base_url: "${upstream.url}/v1"}}\npricing: {auto_update: false}\n`)
    const child = spawn(process.execPath, ['--trace-opt', '--redirect-code-traces', `--redirect-code-traces-to=${trace}`, CLI, '--config', cfg, '--data-dir', join(dir, 'data')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.add(child)
    const exit = new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
    const url = await listeningUrl(child).url
    // What V8 compiled up to the server's "listening" line (and perhaps a moment after it).
    const atListen = readFileSync(trace, 'utf8')
    // The probe works: start-up's hot functions reached Maglev, V8's mid tier (still on).
    expect(atListen).toMatch(/\(target MAGLEV/)
    expect(atListen.split('\n').filter((l) => TURBOFAN.test(l))).toEqual([])
    expect((await request(`${url}/api/health`)).status).toBe(200)
    // What loads after the server answers (the API app, built by this request if not before;
    // undici, a moment after listening) loads with TurboFan held too.
    expect((await request(`${url}/api/dashboard/summary`)).status).toBe(200)
    await new Promise((r) => setTimeout(r, 400))
    expect(readFileSync(trace, 'utf8').split('\n').filter((l) => TURBOFAN.test(l))).toEqual([])

    // Calls: their hot code reaches TurboFan (the compiler is back on), and every call is answered.
    let calls = 0
    await expect
      .poll(
        async () => {
          for (let i = 0; i < 100; i++) {
            const r = await postJson(`${url}/openai/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-tiering-0001' })
            expect(r.status).toBe(200)
            calls++
          }
          return TURBOFAN.test(readFileSync(trace, 'utf8'))
        },
        { timeout: 90_000, interval: 1 },
      )
      .toBe(true)
    expect(calls).toBeGreaterThan(0)
    child.kill('SIGTERM')
    expect(await exit).toBe(0)
  }, 120_000)

  it("the built-in modules start-up loads use Node's code cache (loaded before the flag changes)", async () => {
    const cfg = join(dir, 'cache.yaml')
    writeFileSync(cfg, 'server: {host: 127.0.0.1, port: 0}\npricing: {auto_update: false}\n')
    const child = spawn(process.execPath, [CLI, '--config', cfg, '--data-dir', join(dir, 'cache')], {
      env: { ...process.env, NODE_DEBUG_NATIVE: 'CODE_CACHE' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.add(child)
    const exit = new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
    const started = listeningUrl(child)
    const url = await started.url
    expect((await request(`${url}/api/health`)).status).toBe(200)
    child.kill('SIGTERM')
    expect(await exit).toBe(0)
    const lines = started.output().split('\n')
    const rejected = lines.flatMap((l) => /^Code cache of (\S+) .*is rejected/.exec(l)?.[1] ?? [])
    // The probe works: Node reports the built-in modules it compiles with their code cache.
    expect(lines.some((l) => /^Code cache of _http_server .*is accepted/.test(l))).toBe(true)
    for (const name of STARTUP_BUILTINS) expect(rejected, name).not.toContain(name.slice('node:'.length))
    // Without loading them first, about 100 were refused; a few small internal ones that load
    // lazily later remain.
    expect(rejected.length).toBeLessThan(25)
  }, 60_000)
})

