import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { type Answers, backgroundBody, backgroundResponder } from '../providers/background-support'
import { postJson, request } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

// PostgreSQL (`storage.url`): the thresholds announced in a calendar period are kept in the shared
// database (`budget_announced`), so an instance started again does not announce one again in its
// period though the spend it reads back fell under it (a failed job's estimate taken back) and
// crosses it anew. (Its webhooks were already claimed once each: alerts/claims.ts.)

const answers: Answers = new Map()
const h = usePostgres({ upstream: backgroundResponder(answers) })
const KEY = 'sk-pgannc-aaaaaaaaaaaa-0001'
// A queued deep-research job is recorded at its prompt's estimate ($0.00012): 60% of this limit.
const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-pgannc-*', daily_limit_usd: 0.0002, action: 'warn' }] } }

const job = (t: TestServer, id: string) =>
  postJson(`${t.url}/v1/responses`, { model: 'o3-deep-research', input: 'Research otters.', background: true, metadata: { id } }, { authorization: `Bearer ${KEY}` })

/** The server's meters have been read from PostgreSQL once (with the thresholds announced); the thresholds it announces from now on. */
async function ready(t: TestServer): Promise<number[]> {
  const { engine, feed } = budgetsOf(t.server.context)
  await until('the meters are read', () => feed!.status().listening && feed!.stats.reloads > 0)
  const seen: number[] = []
  engine.onThreshold((e) => seen.push(e.pct))
  return seen
}

describe('threshold alerts across a restart on PostgreSQL', () => {
  it('a threshold announced today is not announced again by the instance started again', async () => {
    const url = h.database()
    const a = await h.server({ url, config })
    const seenA = await ready(a)
    expect((await job(a, 'resp_pgannc_a')).status).toBe(200)
    await until('50% is announced', () => seenA.length === 1)
    expect(seenA).toEqual([0.5])
    // It failed: its estimate is taken back, the day's spend is $0 again.
    answers.set('resp_pgannc_a', { ...backgroundBody('resp_pgannc_a', 'failed', null), error: { code: 'server_error', message: 'failed' } })
    expect((await request(`${a.url}/v1/responses/resp_pgannc_a`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
    const store = h.store(url)
    await until('the estimate is taken back', async () => (await store.get<{ n: number }>('SELECT count(*)::int AS n FROM calls WHERE cost_usd > 0'))!.n === 0)
    await a.stop()

    const b = await h.server({ url, config, dir: a.dir })
    const seenB = await ready(b)
    expect((await job(b, 'resp_pgannc_b')).status).toBe(200) // 60% again
    expect((await job(b, 'resp_pgannc_c')).status).toBe(200) // 120%
    await until('the thresholds not announced yet are', () => seenB.includes(1))
    expect(seenB).toEqual([0.8, 0.9, 1])
  })
})
