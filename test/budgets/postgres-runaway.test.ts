import { beforeAll, describe, expect, it } from 'vitest'
import { getJson } from '../dashboard/seed'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * The deferred (`warn`) runaway loop check behind the shared budget gate (PostgreSQL): a call
 * whose admission waits for its reservation in the database carries the loop warning on the call
 * that trips it, counted once each in arrival order; a call the shared state refuses is not counted.
 */

const HEADER = 'x-burnrate-runaway-warning'
const h = usePostgres({
  upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }),
})
let t: TestServer

beforeAll(async () => {
  // On a new database.
  t = await h.server({
    config: {
      runaway: { loop: { action: 'warn', repeats: 3 } },
      budgets: {
        rules: [
          { api_key_pattern: 'sk-ant-pgrun-*', daily_limit_usd: 5, action: 'block' },
          { api_key_pattern: 'sk-ant-pgzero-*', daily_limit_usd: 0, action: 'block' },
        ],
      },
    },
  })
}, 120_000)

const msg = (role: string, text: string) => ({ role, content: text })
function stuck(n: number, session: string): unknown[] {
  const messages = [msg('user', `fix the parser in ${session}`)]
  for (let i = 0; i < n; i++) messages.push(msg('assistant', 'npm test'), msg('user', 'Error: Cannot find module src/parser.ts'))
  return messages
}
function call(key: string, session: string, n: number) {
  return postJson(
    `${t.url}/v1/messages`,
    { model: 'claude-sonnet-4-5', max_tokens: 64, messages: stuck(n, session) },
    { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'x-burnrate-session': session },
  )
}
async function loopMarks(session: string) {
  const marks = (await getJson(`${t.url}/api/dashboard/alerts`)).body.runaway as { kind: string; session: string; repeats: number }[]
  return marks.filter((m) => m.kind === 'loop' && m.session === session)
}
const seenBy = (session: string) => h.upstream.requests.filter((r) => r.body.toString('utf8').includes(`fix the parser in ${session}`)).length

describe('shared budget gate (PostgreSQL), runaway loop: warn', () => {
  it('calls admitted after their reservation: the warning on the third identical tail, then the fourth', async () => {
    const session = 'pg-deferred'
    const key = 'sk-ant-pgrun-aaaaaaaa-0001'
    for (const n of [1, 2]) {
      const r = await call(key, session, n)
      expect(r.status).toBe(200)
      expect(r.headers[HEADER]).toBeUndefined()
    }
    expect((await call(key, session, 3)).headers[HEADER]).toBe(`loop: the same request tail 3 times in session ${session}`)
    expect((await call(key, session, 4)).headers[HEADER]).toBe(`loop: the same request tail 4 times in session ${session}`)
    expect(seenBy(session)).toBe(4)
    expect(await loopMarks(session)).toEqual([expect.objectContaining({ action: 'warn', repeats: 3 })])
  })

  it('calls the budget refuses are not counted: none of them is a loop turn', async () => {
    const session = 'pg-deferred-refused'
    const key = 'sk-ant-pgzero-bbbbbbbb-0002'
    for (const n of [1, 2, 3, 4]) {
      const r = await call(key, session, n)
      expect(r.status).toBe(429)
      expect(r.json().error.type).toBe('budget_exceeded')
      expect(r.headers[HEADER]).toBeUndefined()
    }
    expect(seenBy(session)).toBe(0)
    expect(await loopMarks(session)).toEqual([])
  })
})
