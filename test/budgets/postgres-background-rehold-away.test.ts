import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { type Answers, backgroundResponder } from '../providers/background-support'
import { localRows, until, usePostgres } from '../support/pg-harness'
import { jobRules, startJob } from './support'

// PostgreSQL: a background job's hold is kept in the instance's own SQLite file and held again at
// start-up in the shared spend rows (README: Budgets → overshoot, "a restart does not free it").
// A start while PostgreSQL was away (the machine starting, the database after Burnrate) could not
// hold it and removed it from the file: once PostgreSQL was back, the key's next job was let past
// the limit while the first still ran. It stays in the file and is held again once PostgreSQL
// answers. The stopped instance's reservation holds for one lease after the stop: the next job is
// asked for once it has run out, so that only the hold held again can refuse it.

const answers: Answers = new Map()
const h = usePostgres({ upstream: backgroundResponder(answers) })
const KEY = 'sk-pgbgaway-aaaaaaaaaaaa-0001'
const config = { timezone: 'UTC', budgets: { rules: jobRules('sk-pgbgaway-*', 'o3-deep-research*') } }

describe("a background job's hold on PostgreSQL across a restart while PostgreSQL is away", () => {
  it('is held again once PostgreSQL answers: the next job, whose worst case no longer fits, is refused', async () => {
    const url = h.database()
    const store = h.store(url)
    const first = await h.server({ url, config })
    expect((await startJob(first, KEY, 'resp_pgbgaway_a')).status).toBe(200)
    expect((await startJob(first, KEY, 'resp_pgbgaway_b')).status).toBe(429)
    const [{ instance: stopped }] = await store.all<{ instance: string }>('SELECT DISTINCT instance FROM budget_reservations')
    await first.stop()

    // Started again while PostgreSQL is away: the hold cannot be held now.
    h.pg.stopServer()
    const t = await h.server({ url, dir: first.dir, config })
    const holds = budgetsOf(t.server.context).engine.holds
    const kept = () => localRows(t.dbFile, 'SELECT response_id FROM background_holds').map((r) => r.response_id)
    await until('the hold tried once (and forgotten, or tried again)', () => holds.retried > 0 || kept().length === 0)
    expect(kept()).toEqual(['resp_pgbgaway_a'])
    h.pg.startServer()

    const reservations = async (op: '=' | '<>') =>
      (await store.get<{ n: number }>(`SELECT count(*)::int AS n FROM budget_reservations WHERE instance ${op} @i`, { i: stopped }))!.n
    await until("the stopped instance's reservation ran out with its lease, and the hold is held again (or gone from the file)", async () =>
      (await reservations('=')) === 0 && ((await reservations('<>')) > 0 || kept().length === 0), 120_000)
    const after = await startJob(t, KEY, 'resp_pgbgaway_c')
    expect(after.status).toBe(429)
    expect(after.json().error).toMatchObject({ type: 'budget_exceeded', period: 'daily' })
    expect(kept()).toEqual(['resp_pgbgaway_a'])
  }, 240_000)
})
