import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { readJsonFile, writeJsonFile } from './json-file'
import { BudgetNotifier, type Notice, NoticeLog, noticeFor } from './notices'
import { FakeBudgets, budgetAlert } from './test-helpers'

const NOW = Date.parse('2026-11-21T15:00:00Z')
const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function setup(file?: string) {
  const monitor = new FakeBudgets()
  const shown: Notice[] = []
  const path = file ?? join(mkdtempSync(join(tmpdir(), 'burnrate-notices-')), 'notices.json')
  dirs.push(join(path, '..'))
  const notifier = new BudgetNotifier({
    monitor,
    log: NoticeLog.fromJSON(readJsonFile(path)),
    timezone: 'Europe/Berlin',
    show: (n) => shown.push(n),
    save: (log) => writeJsonFile(path, log),
    now: () => NOW,
  })
  return { monitor, shown, notifier, path }
}

describe('noticeFor', () => {
  it('words a warning with spend, limit and reset time in the configured zone', () => {
    const n = noticeFor(budgetAlert({ resets_at: '2026-11-21T23:00:00.000Z' }), 'Europe/Berlin', 'Europe/Berlin')
    expect(n).toEqual({
      level: 'warning',
      title: 'Budget warning: sk-dev-*',
      body: 'Key sk-…9f3a has spent $4.12 of its $5.00 daily limit. It resets Nov 22, 12:00 AM.',
    })
  })
  it("marks the spend of a window holding calls of no known price, and says what that means", () => {
    const n = noticeFor(budgetAlert({ unpriced_requests: 2, resets_at: '2026-11-21T23:00:00.000Z' }), 'Europe/Berlin', 'Europe/Berlin')
    expect(n.body).toBe('Key sk-…9f3a has spent $4.12 + 2 unpriced of its $5.00 daily limit. Calls with no known price count as $0 in it: the real spend is more. It resets Nov 22, 12:00 AM.')
    const b = noticeFor(budgetAlert({ level: 'blocking', spent_usd: 5.031, unpriced_requests: 1, resets_at: '2026-11-22T00:00:00.000Z' }), 'UTC', 'UTC')
    expect(b.body).toBe('Key sk-…9f3a reached its $5.00 daily limit ($5.03 + 1 unpriced spent). Calls with no known price count as $0 in it: the real spend is more. Burnrate refuses its calls until Nov 22, 12:00 AM.')
    const t = noticeFor(budgetAlert({ threshold_pct: 0.8, unpriced_requests: 3, resets_at: '2026-11-22T00:00:00.000Z' }), 'UTC', 'UTC')
    expect(t.title).toBe('Budget at 80%: sk-dev-*')
    expect(t.body).toMatch(/^Key sk-…9f3a has spent \$4\.12 \+ 3 unpriced of its \$5\.00 daily limit\. Calls with no known price/)
  })
  it('waits for the monitor to be ready before telling the alerts standing at start, and tells those raised meanwhile', async () => {
    const { monitor, shown } = setup()
    let open!: () => void
    const ready = new Promise<void>((r) => (open = r))
    const notifier = new BudgetNotifier({ monitor, log: new NoticeLog(), timezone: 'UTC', show: (n) => shown.push(n), save: () => {}, now: () => NOW, ready })
    monitor.current = [budgetAlert()]
    notifier.start()
    expect(shown).toHaveLength(0)
    monitor.raise(budgetAlert({ api_key_pattern: 'sk-other-*', threshold_pct: 0.8 }))
    expect(shown.map((n) => n.title)).toEqual(['Budget at 80%: sk-other-*'])
    open()
    await ready
    await Promise.resolve()
    // (The one raised meanwhile stands too, and was told.)
    expect(shown.map((n) => n.title)).toEqual(['Budget at 80%: sk-other-*', 'Budget warning: sk-dev-*'])
    notifier.stop()
  })
  it('words a block', () => {
    const n = noticeFor(budgetAlert({ level: 'blocking', spent_usd: 5.031, period: 'monthly', resets_at: '2026-12-01T00:00:00.000Z' }), 'UTC', 'UTC')
    expect(n.title).toBe('Budget reached: sk-dev-*')
    expect(n.body).toBe('Key sk-…9f3a reached its $5.00 monthly limit ($5.03 spent). Burnrate refuses its calls until Dec 1, 12:00 AM.')
  })
  it('names the configured zone when it is not this machine\'s, so a reset is not read as local time', () => {
    const alert = budgetAlert({ resets_at: '2026-12-01T00:00:00.000Z' })
    expect(noticeFor(alert, 'UTC', 'Europe/Berlin').body).toMatch(/It resets Dec 1, 12:00 AM UTC\.$/)
    expect(noticeFor(alert, 'America/New_York', 'Europe/Berlin').body).toMatch(/It resets Nov 30, 7:00 PM EST\.$/)
    expect(noticeFor(alert, 'Etc/UTC', 'UTC').body).toMatch(/It resets Dec 1, 12:00 AM\.$/)
  })
})

describe('BudgetNotifier', () => {
  it('notifies once per rule per period per level, even for many keys and repeated alerts', () => {
    const { monitor, shown, notifier } = setup()
    notifier.start()
    monitor.raise(budgetAlert())
    monitor.raise(budgetAlert({ api_key_hash: 'b'.repeat(64), key_hint: 'sk-…0000' }))
    monitor.raise(budgetAlert({ spent_usd: 4.5 }))
    expect(shown.map((n) => n.level)).toEqual(['warning'])
    monitor.raise(budgetAlert({ level: 'blocking', spent_usd: 5 }))
    monitor.raise(budgetAlert({ level: 'blocking', spent_usd: 5.2 }))
    expect(shown.map((n) => n.level)).toEqual(['warning', 'blocking'])
    // another period of the same rule, and another rule, are new
    monitor.raise(budgetAlert({ period: 'monthly', resets_at: '2026-12-01T00:00:00.000Z' }))
    monitor.raise(budgetAlert({ api_key_pattern: 'sk-ci-*' }))
    expect(shown).toHaveLength(4)
    notifier.stop()
    monitor.raise(budgetAlert({ api_key_pattern: 'sk-other-*' }))
    expect(shown).toHaveLength(4)
  })

  it('notifies each alert_at_pct threshold once in a period, named by its percentage', () => {
    const { monitor, shown, notifier } = setup()
    notifier.start()
    monitor.raise(budgetAlert({ threshold_pct: 0.5, spent_usd: 2.5 }))
    monitor.raise(budgetAlert({ threshold_pct: 0.5, spent_usd: 2.6 }))
    monitor.raise(budgetAlert({ threshold_pct: 0.8, spent_usd: 4 }))
    expect(shown.map((n) => n.title)).toEqual(['Budget at 50%: sk-dev-*', 'Budget at 80%: sk-dev-*'])
    monitor.raise(budgetAlert({ level: 'blocking', spent_usd: 5 }))
    monitor.raise(budgetAlert({ threshold_pct: 0.9, spent_usd: 5 }))
    expect(shown).toHaveLength(3)
  })

  it('does not warn after the rule already blocked in that period', () => {
    const { monitor, shown, notifier } = setup()
    notifier.start()
    monitor.raise(budgetAlert({ level: 'blocking' }))
    monitor.raise(budgetAlert({ level: 'warning' }))
    expect(shown.map((n) => n.level)).toEqual(['blocking'])
  })

  it('shows alerts that already stand at start, and not again after a restart', () => {
    const first = setup()
    first.monitor.current = [budgetAlert()]
    first.notifier.start()
    expect(first.shown).toHaveLength(1)
    first.notifier.stop()
    const again = setup(first.path)
    again.monitor.current = [budgetAlert()]
    again.notifier.start()
    expect(again.shown).toHaveLength(0)
    again.monitor.raise(budgetAlert({ level: 'blocking' }))
    expect(again.shown).toHaveLength(1)
  })

  it('forgets periods that have ended, and survives a corrupt state file', () => {
    const log = new NoticeLog()
    expect(log.claim(budgetAlert({ resets_at: '2026-11-21T16:00:00Z' }), NOW)).toBe(true)
    expect(Object.keys(log.toJSON())).toHaveLength(1)
    expect(log.claim(budgetAlert({ api_key_pattern: 'x' }), NOW + 2 * 3600_000)).toBe(true)
    expect(Object.keys(log.toJSON())).toHaveLength(1)

    const dir = mkdtempSync(join(tmpdir(), 'burnrate-notices-'))
    dirs.push(dir)
    writeFileSync(join(dir, 'notices.json'), '{"oops": 3')
    expect(NoticeLog.fromJSON(readJsonFile(join(dir, 'notices.json'))).toJSON()).toEqual({})
    expect(NoticeLog.fromJSON({ a: 1 }).toJSON()).toEqual({})
  })
})
