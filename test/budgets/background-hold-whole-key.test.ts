import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { backgroundServer } from './background-server'

// A background job's hold is kept in the data folder's file (`background_holds`: "ids, key hash,
// rule and amount, no key": README, Budgets → overshoot). Its rule was kept as written, and a rule
// on one key names the whole key: the raw key sat in the file for as long as the job ran. The
// rule's pattern is kept hashed, and the hold is still held again at start-up, under the same rule
// or, its scope edited before the restart, under the rule of its pattern.

const KEY = 'sk-bgwhole-0123456789abcdefSECRET'
const jobs = backgroundServer(KEY)

const start = (id: string) => jobs.start(KEY, id)

/** The kept holds' rules, and whether the key's text is anywhere in the ledger's files. */
function kept(dir: string): { rules: string[]; keyOnDisk: boolean } {
  const file = join(dir, 'burnrate.db')
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    const rules = db.prepare('SELECT rule FROM background_holds').pluck().all() as string[]
    const text = ['', '-wal'].map((s) => { try { return readFileSync(file + s).toString('latin1') } catch { return '' } }).join('')
    return { rules, keyOnDisk: text.includes(KEY) }
  } finally {
    db.close()
  }
}

describe("a background job's hold under a rule on one whole key", () => {
  it('is kept without the key, and held again after a restart, as written and with its scope edited', async () => {
    expect((await start('resp_bgwhole_a')).status).toBe(200)
    expect((await start('resp_bgwhole_b')).status).toBe(429)

    await jobs.stop()
    const holds = kept(jobs.dir())
    expect(holds.rules).toHaveLength(1)
    expect(holds.rules[0]).not.toContain(KEY)
    expect(holds.keyOnDisk).toBe(false)

    // Held again under the same rule: the next job, whose worst case no longer fits, is refused.
    await jobs.restart('o3-deep-research*')
    expect((await start('resp_bgwhole_c')).status).toBe(429)

    // And under the rule of its pattern once its scope was edited.
    await jobs.stop()
    await jobs.restart('o3-*')
    const after = await start('resp_bgwhole_d')
    expect(after.status).toBe(429)
    expect(after.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily' })
  })
})
