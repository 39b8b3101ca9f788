import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { getJson } from '../dashboard/seed'
import { eventually, postJson } from '../support/http'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from '../budgets/support'
import type { PgHarness } from '../support/pg-harness'
import { receiver } from './support'

/** The alert-claims tests' instances on one PostgreSQL, their calls (keys `sk-claim-*`) and their meters. */
export type ClaimServer = Awaited<ReturnType<typeof pgBudgetServer>>

const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }] }

export const claimCall = (s: ClaimServer, key: string) => postJson(`${s.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })

/** What the `sk-claim-*` rule's first window says `key` spent, as the dashboard shows it. */
export async function claimSpent(s: ClaimServer, key: string): Promise<number> {
  const body = (await getJson(`${s.url}/api/dashboard/budgets`)).body
  return body.rules.find((r: any) => r.rule.api_key_pattern === 'sk-claim-*' && r.api_key_hash === hashKey(key))?.windows[0].spent_usd ?? 0
}

/** An instance that has counted a call of its own (`warm`) and read the shared meters at least once. */
export async function claimReady(s: ClaimServer, warm: string): Promise<void> {
  expect((await claimCall(s, warm)).status).toBe(200)
  await eventually(async () => (await claimSpent(s, warm)) > 0, 20_000)
  await eventually(() => (budgetsOf(s.server.context).feed?.stats.reloads ?? 0) > 0, 20_000)
}

/** A webhook that takes each POST while `state.up` (recording its body), and answers 500 otherwise; on `port` if given. */
export async function claimHook(up = true, port = 0) {
  const got: any[] = []
  const state = { up, posts: 0 }
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = []
    for await (const c of req) parts.push(c as Buffer)
    state.posts++
    if (!state.up) return void res.writeHead(500).end()
    got.push(JSON.parse(Buffer.concat(parts).toString('utf8')))
    res.writeHead(204).end()
  })
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  return { url, got, state, close: () => new Promise<void>((r) => server.close(() => r())) }
}

/**
 * Two instances on one new database with a `sk-claim-*` warn rule (alert at 50% of 4 calls) and a
 * JSON webhook, each having counted a call of its own: the set-up of the settle tests.
 */
export async function twoClaimServers(h: PgHarness) {
  const hook = await receiver()
  h.onTeardown(() => hook.close())
  const url = h.database()
  const budgets = { rules: [{ api_key_pattern: 'sk-claim-*', daily_limit_usd: NANO_COST * 4, action: 'warn', alert_at_pct: [0.5] }] }
  const config = { budgets, alerts: { webhooks: [{ url: `${hook.url}/hook`, format: 'json' }] } }
  const a = await pgBudgetServer(h, url, config)
  const b = await pgBudgetServer(h, url, config)
  replayJson(h.upstream, NANO_FIXTURE)
  await claimReady(a, 'sk-claim-warm-0001')
  await claimReady(b, 'sk-claim-warm-0002')
  return { hook, url, config, a, b }
}
