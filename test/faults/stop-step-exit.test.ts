import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLI, ROOT } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'

// The built headless server (out/main/cli.js) stopped by a signal, with a step of the stop that
// fails (./close-fails-preload.mjs: closing the ledger file throws once it has closed it). Every
// step runs whichever fails and the ledger is flushed (./close-step-throws.test.ts), but the
// process then exited 0, as after a clean stop: a service manager or script could not tell.

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
})
afterAll(async () => {
  await upstream.close()
})

describe('a stop in which a step fails', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('%s: runs every step, loses no call, and exits 1', async (signal) => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-stop-step-'))
    try {
      const cfg = join(dir, 'config.yaml')
      writeFileSync(cfg, `server:\n  port: 0\nproviders:\n  openai:\n    base_url: ${upstream.url}/v1\n`)
      const preload = pathToFileURL(join(ROOT, 'test/faults/close-fails-preload.mjs')).href
      const child = spawn(process.execPath, ['--import', preload, CLI, '--config', cfg, '--data-dir', dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)))
      let err = ''
      child.stderr!.on('data', (d) => (err += d))
      const url = await eventually(() => /listening on (http:\/\/\S+)/.exec(err)?.[1])
      for (let i = 0; i < 5; i++) expect((await postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini' }, { authorization: 'Bearer sk-stop-step-0001' })).status).toBe(200)
      child.kill(signal)
      expect(await exited).toBe(1)
      expect(err).toMatch(/stopping: .* failed \(closing the ledger file failed \(test\)\); the stop goes on/)
      expect(err).not.toMatch(/shutdown failed/)
      // The steps after it ran: the folder is let go, every call is in the ledger.
      expect(existsSync(join(dir, 'server.lock'))).toBe(false)
      const db = new Database(join(dir, 'burnrate.db'), { readonly: true })
      try {
        expect(db.prepare('SELECT count(*) FROM calls').pluck().get()).toBe(5)
      } finally {
        db.close()
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
