import { describe, expect, it } from 'vitest'
import { backgroundServer } from './background-server'

// A background job's hold is kept in the data folder's file and held again at start-up, under its
// rule (README: Budgets → overshoot). A restart is also how a config rule is edited: its scope
// edited in the file (or a runtime rule's through the admin API before the restart), the hold was
// matched by the rule's exact scope, found no rule and was forgotten, and the key's next job was
// let past the limit while the first still ran. It is held again under the rule of its pattern, as
// a rule change without a restart keeps the calls in flight (meter-book.ts carryOver).

const jobs = backgroundServer('sk-bgedit-*')

const start = (key: string, id: string) => jobs.start(key, id)

describe("a background job's hold across a restart that edited its rule's scope", () => {
  it('is held again under the rule of its pattern: the next job, whose worst case no longer fits, is refused', async () => {
    const key = 'sk-bgedit-aaaaaaaaaaaa-0001'
    expect((await start(key, 'resp_bgedit_a')).status).toBe(200)
    const second = await start(key, 'resp_bgedit_b')
    expect(second.status).toBe(429)

    // Restarted with the rule's scope widened (it still covers the job, which runs on).
    await jobs.stop()
    await jobs.restart('o3-*')
    const after = await start(key, 'resp_bgedit_c')
    expect(after.status).toBe(429)
    expect(after.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily' })
    expect(after.json().error.message).toMatch(/could cost up to/)
  })
})
