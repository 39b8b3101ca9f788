import { describe, expect, it } from 'vitest'
import { budgetsOf } from '../../src/main/budgets'
import { hashKey } from '../../src/main/proxy/attribution'
import { PeriodClock } from '../../src/main/time/zone'
import { ADMIN_CONFIG } from '../admin/support'
import { eventually, postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { NANO_COST, NANO_FIXTURE, pgBudgetServer, replayJson } from './support'

/**
 * Two instances on one PostgreSQL whose configs name different zones: a daily limit is one spend
 * row per day, so each used to fill a row of its own (their days begin 14 hours apart) and the
 * key got the limit twice. Budget periods now follow one clock in the database, set by the
 * instance that started last; the other follows it within about a second.
 */

const BODY = { model: 'gpt-5-nano', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 300 }

const h = usePostgres()

const server = (url: string, timezone: string, rules: unknown[]) =>
  pgBudgetServer(h, url, { timezone, budgets: { rules, week_start: timezone === 'UTC' ? 'monday' : 'sunday' }, ...ADMIN_CONFIG })

describe('the budget clock shared by instances on one PostgreSQL', () => {
  it('a daily limit is one day for both instances, in the zone of the one that started last', async () => {
    const url = h.database()
    const key = 'sk-clock-aaaaaaaa-0001'
    // Room for two calls (the rule reserves the expected cost, learned from the first answer).
    const rules = [{ api_key_pattern: 'sk-clock-*', daily_limit_usd: NANO_COST * 2.5, action: 'block' }]
    const a = await server(url, 'UTC', rules)
    const clock = () => a.store.get<{ timezone: string | null; week_start: string | null }>('SELECT timezone, week_start FROM budget_clock WHERE one = 1')
    await eventually(async () => (await clock())?.timezone === 'UTC', 20_000)
    const b = await server(url, 'Pacific/Kiritimati', rules)
    await eventually(async () => (await clock())?.timezone === 'Pacific/Kiritimati', 20_000)
    expect(await clock()).toEqual({ timezone: 'Pacific/Kiritimati', week_start: 'sunday' })
    // A follows the database's clock: its meters count Kiritimati's days (and weeks from Sunday).
    const engineA = budgetsOf(a.server.context).engine
    await eventually(() => engineA.clock.tz === 'Pacific/Kiritimati', 20_000)
    expect(engineA.clock.weekStart).toBe(0)

    replayJson(h.upstream, NANO_FIXTURE)
    const statuses: number[] = []
    for (let i = 0; i < 6; i++) {
      const r = await postJson(`${a.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })
      statuses.push(r.status)
      if (r.status === 429) break
    }
    expect(statuses.at(-1)).toBe(429)
    const answered = statuses.filter((s) => s === 200).length
    expect(answered).toBeGreaterThan(0)
    // B's day is A's day: the key is over its limit there too.
    const other = await postJson(`${b.url}/v1/chat/completions`, BODY, { authorization: `Bearer ${key}` })
    expect(other.status).toBe(429)
    expect(other.json().error.type).toBe('budget_exceeded')

    // One daily row for the key, starting at Kiritimati's midnight (UTC+14), holding every answered call.
    await a.server.ledger.flushed()
    const day = new PeriodClock('Pacific/Kiritimati').dayOf(Date.now()).start
    await eventually(async () => {
      const rows = await a.store.all<{ period_start: number; spent_usd: number }>(
        "SELECT period_start, spent_usd FROM budget_spend WHERE api_key_hash = @k AND period = 'daily'",
        { k: hashKey(key) },
      )
      return rows.length === 1 && Number(rows[0].period_start) === day && Math.abs(rows[0].spent_usd - answered * NANO_COST) < 1e-12
    }, 20_000)
  }, 120_000)

  it('the first instance sets the clock from its config; one started later with another zone moves it for both, and says so', async () => {
    const url = h.database()
    const store = h.store(url)
    const lines = { a: [] as string[], b: [] as string[] }
    const logger = (into: string[]) => ({ debug() {}, info: (m: string) => into.push(m), warn: (m: string) => into.push(m), error: (m: string) => into.push(m) })
    const start = (zone: string, into: string[]) =>
      h.server({ url, config: { timezone: zone, budgets: { rules: [], week_start: 'monday' } }, log: logger(into) })
    const clock = () => store.get<{ timezone: string | null }>('SELECT timezone FROM budget_clock WHERE one = 1')
    const a = await start('Europe/Berlin', lines.a)
    await eventually(async () => (await clock())?.timezone === 'Europe/Berlin', 20_000)
    expect(budgetsOf(a.server.context).engine.clock.tz).toBe('Europe/Berlin')
    const b = await start('UTC', lines.b)
    await eventually(async () => (await clock())?.timezone === 'UTC', 20_000)
    expect(budgetsOf(b.server.context).engine.clock.tz).toBe('UTC')
    await eventually(() => budgetsOf(a.server.context).engine.clock.tz === 'UTC', 20_000)
    expect(lines.b.join('\n')).toContain("this database's budget clock was Europe/Berlin, weeks from monday; this instance's config sets it to UTC, weeks from monday")
    expect(lines.a.join('\n')).toContain("another instance on this database set the budget clock to UTC, weeks from monday; this instance counts budget days, weeks and months in it, not in its config's Europe/Berlin")
  }, 120_000)

  it('an instance whose config names no zone sets the clock only while none is set: it follows the team instead of moving it', async () => {
    const url = h.database()
    const store = h.store(url)
    const lines: string[] = []
    const logger = { debug() {}, info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) }
    const clock = () => store.get<{ timezone: string | null }>('SELECT timezone FROM budget_clock WHERE one = 1')
    const team = await h.server({ url, config: { timezone: 'Pacific/Kiritimati', budgets: { rules: [], week_start: 'monday' } } })
    await eventually(async () => (await clock())?.timezone === 'Pacific/Kiritimati', 20_000)
    // A laptop joining the database with no zone in its config (it counts in the machine's own).
    const laptop = await h.server({ url, config: { budgets: { rules: [], week_start: 'monday' } }, log: logger })
    expect(laptop.server.context.config.timezone_from).toBe('machine')
    expect(laptop.server.context.config.timezone).not.toBe('Pacific/Kiritimati')
    await eventually(() => budgetsOf(laptop.server.context).engine.clock.tz === 'Pacific/Kiritimati', 20_000)
    expect((await clock())?.timezone).toBe('Pacific/Kiritimati')
    expect(budgetsOf(team.server.context).engine.clock.tz).toBe('Pacific/Kiritimati')
    expect(lines.join('\n')).toContain('another instance on this database set the budget clock to Pacific/Kiritimati')
    expect(lines.join('\n')).not.toContain("this instance's config sets it to")
    // Alone on an empty database, such an instance does set it (from its machine's zone).
    const fresh = h.database()
    const alone = await h.server({ url: fresh, config: { budgets: { rules: [], week_start: 'monday' } } })
    await eventually(async () => (await h.store(fresh).get<{ timezone: string | null }>('SELECT timezone FROM budget_clock WHERE one = 1'))?.timezone === alone.server.context.config.timezone, 20_000)
  }, 120_000)
})
