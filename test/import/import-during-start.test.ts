import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { KEYS_SQL } from '../../src/main/budgets/shared-history'
import type { Feature } from '../../src/main/server/context'
import { FEATURES } from '../../src/main/server/server'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { startTestServer } from '../support/server'
import { BODY, PROJECT_DIR, supersedeRig } from '../support/superseded'

/**
 * A server starting with no budget rule counts its keys' requests this month (the admin API's
 * requests_month) from one read of the ledger, and the calls `burnrate import` stores beside it
 * from the import's notices after the newest it had seen. The two were separate reads: the
 * notices' starting point as the budgets were set up, the keys' count after; a `burnrate import`
 * committing between them was in the count and read again from its notice, its call two of its
 * key's requests until a restart.
 */

const ROOT = join(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const rig = supersedeRig('burnrate-import-during-start')

describe('a burnrate import committing while a server starts, with no budget rule', () => {
  it("counts its call once in its key's requests_month", async () => {
    if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-test-'))
    const home = rig.home()
    // Older than the wait an import beside a running server gives the newest lines.
    const at = Date.now() - 20 * 60_000
    rig.transcript(home, 'starting', JSON.stringify({
      type: 'assistant', sessionId: 'starting', uuid: 'u-1', cwd: '/home/dev/shop', timestamp: new Date(at).toISOString(), requestId: 'req_1',
      message: { ...BODY, usage: { ...BODY.usage, output_tokens: 1 } },
    }) + '\n')
    let imported: string | null = null
    // The import commits as the server's start-up reads its keys' requests (once): a real `burnrate import`, in a process of its own.
    const importAsKeysAreRead: Feature = (ctx) => {
      const db = ctx.db as Database.Database
      const prepare = db.prepare.bind(db)
      db.prepare = ((sql: string) => {
        const stmt = prepare(sql)
        if (sql !== KEYS_SQL) return stmt
        const all = stmt.all.bind(stmt)
        stmt.all = ((...args: unknown[]) => {
          imported ??= execFileSync(process.execPath, [CLI, 'import', 'claude-code', '--path', join(home, PROJECT_DIR, '..'), '--config', join(dir, 'config.yaml'), '--data-dir', dir, '--json'], {
            env: { ...process.env, HOME: home }, encoding: 'utf8',
          })
          return all(...(args as []))
        }) as typeof stmt.all
        return stmt
      }) as typeof db.prepare
    }
    const t = await startTestServer({ ...ADMIN_CONFIG, import: { watch: false }, timezone: 'UTC' }, rig.upstream.url, dir, {
      create: { features: [importAsKeysAreRead, ...FEATURES], noticeIntervalMs: 100 },
    })
    try {
      expect(imported, 'the import ran as the keys were read').not.toBeNull()
      expect(JSON.parse(imported!).results[0]).toMatchObject({ imported: 1 })
      const { db } = t.server
      // The server has read every notice the import left.
      const start = Date.now()
      while (db.prepare('SELECT count(*) FROM call_notices').pluck().get() !== 0) {
        if (Date.now() - start > 10_000) throw new Error('the notices were never read')
        await new Promise((r) => setTimeout(r, 50))
      }
      const keyless = (await admin(t.url, 'GET', '/api-keys')).json().find((k: any) => k.api_key_hash === '')
      expect(keyless).toMatchObject({ requests_month: 1, last_seen_at: new Date(at).toISOString() })
      // As a restart reads it.
      const again = await t.restart()
      try {
        const k = (await admin(again.url, 'GET', '/api-keys')).json().find((x: any) => x.api_key_hash === '')
        expect(k).toMatchObject({ requests_month: 1 })
      } finally {
        await again.cleanup()
      }
    } finally {
      await t.cleanup()
    }
  })
})
