import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLI, ROOT } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'

// The built headless server (out/main/cli.js) stopped after what reads its log has gone: the
// terminal or ssh session closed (SIGHUP, then every write to it fails with EIO), or the other end
// of `burnrate serve 2>&1 | tee log` ended with it (Ctrl-C: SIGINT, then EPIPE). The stop's first
// log line failed, the error was thrown, and the process died there: the calls of the batch not
// yet written were lost and server.lock left behind.

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
})
afterAll(async () => {
  await upstream.close()
})

describe('a stop once the log cannot be written', () => {
  it.each(['SIGINT', 'SIGHUP', 'SIGTERM'] as const)('%s with its stderr gone: flushes every call, removes its lock and exits 0', async (signal) => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-log-gone-'))
    try {
      const cfg = join(dir, 'config.yaml')
      writeFileSync(cfg, `server:\n  port: 0\nproviders:\n  openai:\n    base_url: ${upstream.url}/v1\n`)
      const child = spawn(process.execPath, [CLI, '--config', cfg, '--data-dir', dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
      let err = ''
      child.stderr!.on('data', (d) => (err += d))
      const url = await eventually(() => /listening on (http:\/\/\S+)/.exec(err)?.[1])
      for (let i = 0; i < 20; i++) expect((await postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini' }, { authorization: 'Bearer sk-log-gone-0001' })).status).toBe(200)
      // The reader goes away, then the signal.
      child.stdout!.destroy()
      child.stderr!.destroy()
      child.kill(signal)
      expect(await exited).toBe(0)
      expect(existsSync(join(dir, 'server.lock'))).toBe(false)
      const db = new Database(join(dir, 'burnrate.db'), { readonly: true })
      expect(db.prepare('SELECT count(*) FROM calls').pluck().get()).toBe(20)
      db.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
