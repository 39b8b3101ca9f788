import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LogWatcher } from '../../src/main/import/watcher'
import { silentLogger } from '../../src/main/log'
import { Pricer } from '../../src/main/pricing/price'
import { type TestServer, startTestServer } from '../support/server'

let t: TestServer
let home: string

beforeAll(async () => {
  t = await startTestServer({ import: { watch: false } })
  home = mkdtempSync(join(tmpdir(), 'burnrate-watch-home-'))
  mkdirSync(join(home, '.claude'), { recursive: true })
  cpSync(resolve(__dirname, '../fixtures/agent-logs/claude-code'), join(home, '.claude'), { recursive: true })
})
afterAll(async () => {
  await t.cleanup()
  rmSync(home, { recursive: true, force: true })
})

describe('watching the agents\' log folders', () => {
  it('imports what is in the standard folders, then only new entries as they appear; budgets see them', async () => {
    const { db, ledger } = t.server
    const w = new LogWatcher({ db, ledger, pricer: new Pricer(), log: silentLogger, env: {}, home, settleMs: 0 })
    const first = await w.runOnce()
    expect(first.find((s) => s.agent === 'claude-code')).toMatchObject({ imported: 3 })
    expect(first.find((s) => s.agent === 'codex')?.missing.length).toBe(2)
    const file = join(home, '.claude/projects/-home-dev-shop/6f1c2a9e-3b4d-4c1e-9a7f-0d2b8c5e1f40.jsonl')
    const ts = Date.now() - 60_000
    appendFileSync(file, '\n' + JSON.stringify({
      type: 'assistant', sessionId: 'live', cwd: '/home/dev/shop', timestamp: new Date(ts).toISOString(),
      message: { id: 'msg_live', model: 'claude-haiku-4-5-20251001', usage: { input_tokens: 1000, output_tokens: 100 } },
    }) + '\n')
    const second = await w.runOnce()
    expect(second.find((s) => s.agent === 'claude-code')).toMatchObject({ imported: 1, unchanged: 1 })
    expect(db.prepare("SELECT count(*) FROM calls WHERE source = 'import'").pluck().get()).toBe(4)
    // Today's imported spend is in the tracker the budgets read.
    const cost = db.prepare("SELECT cost_usd FROM calls WHERE response_id = 'msg_live'").pluck().get() as number
    expect(cost).toBeGreaterThan(0)
    expect(ledger.spend.key('').month).toBeGreaterThanOrEqual(cost)
    await w.stop()
  })
})
