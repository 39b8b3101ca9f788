import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { LogWatcher } from '../../src/main/import/watcher'
import { silentLogger } from '../../src/main/log'
import { runCliCaptured } from '../support/cli'
import { request } from '../support/http'
import { startTestServer } from '../support/server'
import { planNamed, sessionHead, tokenCount, twoResponses } from './codex-plan-rollout'

/**
 * A Codex session whose plan only a later event named, its first calls stored as money by
 * `burnrate import` beside a running server and re-classed as the plan's by that server's own log
 * watcher before the server read the import's notices: the notices, read as the move was published,
 * took the call for the plan's it is now (no money), and the move then took its money off a spend
 * that never held it, so this month's spend and the budget meters were short by it until a restart.
 */


const keyless = (url: string) => admin(url, 'GET', '/api-keys').then((r) => r.json().find((k: any) => k.api_key_hash === ''))

describe("a Codex session's calls burnrate import stored as money beside a server, re-classed by the server's own watcher", () => {
  it('leave the spend and the meters as a restart has them: they counted once and left once', async () => {
    const config = {
      ...ADMIN_CONFIG, import: { watch: false }, timezone: 'UTC',
      budgets: { rules: [{ api_key_pattern: '*', monthly_limit_usd: 1000, action: 'warn' }] },
    }
    // The server reads the import's notices only when told to (or as a move of its own is published).
    const t = await startTestServer(config, undefined, undefined, { create: { noticeIntervalMs: 3_600_000 } })
    try {
      const codexHome = join(t.dir, 'codex-home')
      const dayDir = join(codexHome, 'sessions/2026/01/01')
      mkdirSync(dayDir, { recursive: true })
      const file = join(dayDir, 'rollout-2026-01-01T00-00-00-beside.jsonl')
      // Older than the wait an import beside a running server gives the newest lines.
      const at = Date.now() - 30 * 60_000
      writeFileSync(file,
        twoResponses(at, 'beside'))
      // Another session, on an API key: money that stays.
      writeFileSync(join(dayDir, 'rollout-2026-01-01T00-00-01-apikey.jsonl'),
        sessionHead(at, 'apikey', '/home/dev/y') +
        tokenCount(at + 2000, [3000, 200], [3000, 200], null))
      const r = await runCliCaptured('import', 'codex', '--path', join(codexHome, 'sessions'), '--config', t.configFile, '--data-dir', t.dir, '--url', t.url, '--json')
      expect(r.code, r.out).toBe(0)
      expect(JSON.parse(r.out).results[0]).toMatchObject({ imported: 3 })
      const { db, context } = t.server
      expect(db.prepare("SELECT count(*) FROM calls WHERE billing = 'api' AND cost_usd > 0").pluck().get()).toBe(3)
      const kept = db.prepare("SELECT cost_usd FROM calls WHERE session = 'apikey'").pluck().get() as number

      // The session's next event names the plan; the server's watcher reads the grown rollout first.
      appendFileSync(file, planNamed(at))
      const w = new LogWatcher({
        db, ledger: context.ledger, pricer: context.pricer, log: silentLogger, env: { CODEX_HOME: codexHome }, home: t.dir, settleMs: 0,
        budgets: () => context.budgets,
      })
      try {
        const pass = await w.runOnce()
        expect(pass.find((s) => s.agent === 'codex')).toMatchObject({ imported: 1, reclassed: 2 })
      } finally {
        await w.stop()
      }
      expect(db.prepare("SELECT session FROM calls WHERE billing = 'api'").pluck().all()).toEqual(['apikey'])
      context.notices!.poll()
      expect(db.prepare('SELECT count(*) FROM call_notices').pluck().get()).toBe(0)

      // The API key session's money only, as a restart reads the ledger.
      const live = await keyless(t.url)
      expect(live.spend_month_usd).toBeCloseTo(kept, 12)
      const listed = (await request(`${t.url}/api/dashboard/budgets`)).json()
      const spent = listed.rules.find((x: any) => x.api_key_hash === '')?.windows.find((x: any) => x.period === 'monthly')?.spent_usd
      expect(spent).toBeCloseTo(kept, 12)

      const again = await t.restart()
      try {
        expect((await keyless(again.url)).spend_month_usd).toBeCloseTo(kept, 12)
      } finally {
        await again.cleanup()
      }
    } finally {
      await t.cleanup()
    }
  })
})
