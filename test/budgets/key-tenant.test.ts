import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { getJson } from '../dashboard/seed'
import { eventually } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { type TestServer, startTestServer } from '../support/server'
import { NANO_COST, NANO_FIXTURE, chat, pgBudgetServer, replayJson } from './support'

// A key's tenant is its latest call's (the key listing, and which tenant's budgets view counts the
// key's spend), whatever the key registry is read from: SQLite's file at start-up, PostgreSQL's
// calls at every re-read of the meters. It was the greatest tenant name the key was used by.

const h = usePostgres()
beforeAll(() => replayJson(h.upstream, NANO_FIXTURE))
let lite: TestServer | null = null
afterEach(async () => {
  await lite?.cleanup()
  lite = null
})

const KEY = 'sk-moved-aaaaaaaa-0001'
const config = {
  ...ADMIN_CONFIG,
  timezone: 'UTC',
  budgets: { rules: [{ api_key_pattern: 'sk-moved-*', daily_limit_usd: 10, action: 'warn' }] },
}

/** A call of the key for tenant "globex", then (its latest) one for "acme". */
async function calls(t: TestServer): Promise<void> {
  for (const tenant of ['globex', 'acme']) expect((await chat(t, KEY, {}, { 'x-burnrate-tenant': tenant })).status).toBe(200)
  expect(await t.server.ledger.flushed()).toBe(true)
}

/** The key's tenant in the key listing, and what acme's budgets view shows the key spent today. */
async function views(t: TestServer): Promise<{ tenant: string; acme: number }> {
  const keys = (await admin(t.url, 'GET', '/api-keys')).json()
  const budgets = (await getJson(`${t.url}/api/dashboard/budgets?tenant=acme`)).body
  return { tenant: keys[0].tenant, acme: budgets.rules[0].windows[0].spent_usd }
}

const expected = { tenant: 'acme', acme: expect.closeTo(2 * NANO_COST, 12) }

describe("a key's tenant is its latest call's", () => {
  it('SQLite: also after a restart (the registry read from the file)', async () => {
    lite = await startTestServer(config, h.upstream.url)
    await calls(lite)
    expect(await views(lite)).toEqual(expected)
    lite = await lite.restart()
    expect(await views(lite)).toEqual(expected)
  }, 60_000)

  it('PostgreSQL: also after a re-read of the meters (the registry read from every instance’s calls)', async () => {
    const t = await pgBudgetServer(h, h.database(), config)
    const feed = budgetsOf(t.server.context).feed!
    await eventually(() => feed.stats.reloads > 0, 20_000) // its meters read once at start-up
    await calls(t)
    // Listed under its rule once the rules PostgreSQL holds are read (as postgres-feed.test.ts waits).
    await eventually(async () => (await views(t)).acme > 0, 20_000)
    expect(await views(t)).toEqual(expected)
    await feed.reload()
    expect(await views(t)).toEqual(expected)
  }, 60_000)
})
