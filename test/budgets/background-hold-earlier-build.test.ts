import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { backgroundServer } from './background-server'

// A background job's hold is kept in the data folder's file with its rule's pattern hashed
// (scope.ts keptRuleIdentity). Builds before that kept the pattern as written (for a rule on one
// whole key, the key itself): a hold such a build kept, its job still running at the upgrade, is
// held again all the same (engine.ts holdRule), under the same rule and with its scope edited.

const KEY = 'sk-bgearlier-0123456789abcdefSECRET'
const jobs = backgroundServer(KEY)

const start = (id: string) => jobs.start(KEY, id)

/** The kept holds' rules, rewritten by `edit` (the server stopped). */
function keptRules(dir: string, edit?: (rule: string) => string): string[] {
  const db = new Database(join(dir, 'burnrate.db'), { fileMustExist: true })
  try {
    const rows = db.prepare('SELECT response_id, rule FROM background_holds').all() as { response_id: string; rule: string }[]
    if (edit) for (const r of rows) db.prepare('UPDATE background_holds SET rule = ? WHERE response_id = ?').run(edit(r.rule), r.response_id)
    return (db.prepare('SELECT rule FROM background_holds').pluck().all() as string[])
  } finally {
    db.close()
  }
}

describe("a background job's hold kept by an earlier build (its rule's pattern as written)", () => {
  it('is held again after the upgrade: the next job, whose worst case no longer fits, is refused, under the same rule and with its scope edited', async () => {
    expect((await start('resp_bgearlier_a')).status).toBe(200)
    expect((await start('resp_bgearlier_b')).status).toBe(429)
    await jobs.stop()

    // The file as an earlier build kept it: the rule's identity with its pattern as written.
    const earlier = keptRules(jobs.dir(), (rule) => {
      const identity = JSON.parse(rule) as unknown[]
      expect(identity[0]).not.toBe(KEY)
      identity[0] = KEY
      return JSON.stringify(identity)
    })
    expect(earlier).toEqual([JSON.stringify([KEY, null, 'o3-deep-research*', null, null])])

    // Held again under the same rule.
    await jobs.restart('o3-deep-research*')
    expect((await start('resp_bgearlier_c')).status).toBe(429)
    await jobs.stop()

    // And under the rule of its pattern once its scope was edited, the file still as the earlier build kept it.
    keptRules(jobs.dir(), () => earlier[0])
    await jobs.restart('o3-*')
    const after = await start('resp_bgearlier_d')
    expect(after.status).toBe(429)
    expect(after.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily' })
  })
})
