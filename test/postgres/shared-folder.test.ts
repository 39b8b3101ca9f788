import { chmodSync, chownSync, existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { request } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'

/**
 * With storage.url, as on SQLite (test/security/shared-folder.test.ts): a spill file in a data
 * folder other users may write is written to the shared ledger only when it is the user's own.
 * Another user's would put forged calls in every team member's totals and budgets.
 */

const h = usePostgres({ upstream: false })
const OTHER = 65534 // nobody

describe('a data folder shared with other users, with storage.url', () => {
  it("a spill file that is not the user's own is not written to PostgreSQL, and stays where it is", async () => {
    const url = h.database()
    const dir = h.tempDir('burnrate-pg-shared-')
    chmodSync(dir, 0o1777) // as /tmp
    const spill = join(dir, 'ledger-spill-1.jsonl')
    writeFileSync(spill, JSON.stringify(makeCall({ ts: Date.now(), cost_usd: 4999, agent: 'planted' })) + '\n')
    if (process.getuid?.() === 0) chownSync(spill, OTHER, OTHER)
    else chmodSync(spill, 0o666)
    const t = await h.server({ url, dir })
    // Ready once the earlier spill files are written and the spend is loaded.
    await until('PostgreSQL ready', async () => (await request(`${t.url}/api/health`)).json().storage?.ready === true)
    const store = h.store(url)
    const row = await store.get<{ n: number }>("SELECT count(*) AS n FROM calls WHERE agent = 'planted'")
    expect(Number(row?.n)).toBe(0)
    expect(existsSync(spill)).toBe(true)
  })
})
