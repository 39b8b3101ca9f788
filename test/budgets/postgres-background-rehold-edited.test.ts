import { describe, expect, it } from 'vitest'
import { type Answers, backgroundResponder } from '../providers/background-support'
import { until, usePostgres } from '../support/pg-harness'
import { jobRules, startJob } from './support'

// PostgreSQL: a background job's hold is kept in the instance's own SQLite file and held again at
// start-up in the shared spend rows (state/postgres.ts hold), under its rule or, its scope edited
// before the restart, the rule of its pattern (engine.ts rehold; on SQLite:
// background-rehold-edited.test.ts). The stopped instance's reservation holds for one lease
// after the stop: the next job is asked for once it has run out, so that only the hold held again
// can refuse it.

const answers: Answers = new Map()
const h = usePostgres({ upstream: backgroundResponder(answers) })
const KEY = 'sk-pgbgedit-aaaaaaaaaaaa-0001'
const config = (model: string) => ({ timezone: 'UTC', budgets: { rules: jobRules('sk-pgbgedit-*', model) } })

describe("a background job's hold on PostgreSQL across a restart that edited its rule's scope", () => {
  it('is held again under the rule of its pattern: the next job, whose worst case no longer fits, is refused once the old lease ran out', async () => {
    const url = h.database()
    const store = h.store(url)
    const first = await h.server({ url, config: config('o3-deep-research*') })
    expect((await startJob(first, KEY, 'resp_pgbgedit_a')).status).toBe(200)
    expect((await startJob(first, KEY, 'resp_pgbgedit_b')).status).toBe(429)
    const before = await store.all<{ instance: string }>('SELECT DISTINCT instance FROM budget_reservations')
    expect(before).toHaveLength(1)
    await first.stop()

    // Restarted with the rule's scope widened (it still covers the job, which runs on).
    const t = await h.server({ url, dir: first.dir, config: config('o3-*') })
    await until("the stopped instance's reservation ran out with its lease", async () =>
      (await store.get<{ n: number }>('SELECT count(*)::int AS n FROM budget_reservations WHERE instance = @i', { i: before[0].instance }))!.n === 0, 120_000)
    const after = await startJob(t, KEY, 'resp_pgbgedit_c')
    expect(after.status).toBe(429)
    expect(after.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily' })
    expect(after.json().error.message).toMatch(/could cost up to/)
  }, 180_000)
})
