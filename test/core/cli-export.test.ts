import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CALL_COLUMNS, CSV_HEADER, type CallRow, csvLine, toCall } from '../../src/main/dashboard/calls'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { makeCall } from '../dashboard/seed'

/**
 * `burnrate export` with no server running reads the data folder's ledger itself, in keyset
 * pages formatted a page at a time: the bytes are what the export has always written
 * (`csvLine`, `JSON.stringify(toCall(r))`, and a last line break after the JSON), across many
 * pages, for every tenant or one, within --since/--until, to stdout or to a file.
 */
const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const TRICKY = ['plain', 'comma, inside', 'a "quoted" word', 'line\nbreak', 'semi;colon', '=SUM(A1)', '-2', 'ünïcødé ✓', 'back\\slash', 'unit\u001fseparator', '']
const DAY = 86_400_000
const start = Date.UTC(2026, 9, 1)

let dir: string
let data: string

beforeAll(() => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
  dir = mkdtempSync(join(tmpdir(), 'burnrate-cli-export-'))
  data = join(dir, 'data')
  mkdirSync(join(dir, 'home'))
  mkdirSync(data)
  const db = openDatabase(join(data, 'burnrate.db'))
  const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1_000_000, timezone: 'UTC' })
  for (let i = 0; i < 12_000; i++) {
    const odd = i % 53 === 0 ? TRICKY[(i / 53) % TRICKY.length] : null
    ledger.record(
      makeCall({
        ts: start + Math.floor(i / 2) * 60_000,
        tenant: i % 3 === 0 ? 'one' : 'other',
        agent: odd ?? `agent-${i % 4}`,
        session: odd ?? `s-${i % 50}`,
        cost_usd: i % 7 === 0 ? 0.1 + 0.2 : i / 3e6,
        latency_ms: i / 7,
        streamed: i % 2 === 0,
      }),
    )
  }
  ledger.flush()
  ledger.close()
  db.close()
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const env = () => ({ ...process.env, HOME: join(dir, 'home'), XDG_CONFIG_HOME: join(dir, 'home/.config'), BURNRATE_PORT: '1', TZ: 'UTC' })

function burnrate(args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args, '--data-dir', data], {
    env: env(),
    encoding: 'utf8',
    maxBuffer: 256 * 2 ** 20,
    timeout: 120_000,
  })
  expect(r.status, r.stderr).toBe(0)
  return r.stdout
}

function expected(format: 'csv' | 'json', where = '', ...params: unknown[]): string {
  const db = new Database(join(data, 'burnrate.db'), { readonly: true })
  try {
    const rows = db.prepare(`SELECT ${CALL_COLUMNS} FROM calls ${where} ORDER BY ts, id`).all(...params) as CallRow[]
    return format === 'csv' ? CSV_HEADER + rows.map(csvLine).join('') : '{"calls":[' + rows.map((r) => JSON.stringify(toCall(r))).join(',') + ']}\n'
  } finally {
    db.close()
  }
}

describe('burnrate export from the data folder', () => {
  it('CSV and JSON of every call: byte for byte the export the main thread always wrote', () => {
    const csv = burnrate(['export', '--format', 'csv'])
    expect(csv === expected('csv')).toBe(true)
    expect(csv.split('\r\n')).toHaveLength(12_002)
    expect(burnrate(['export', '--format', 'json']) === expected('json')).toBe(true)
  })

  it('one tenant, and a window of days, the same way', () => {
    expect(burnrate(['export', '--format', 'csv', '--tenant', 'one']) === expected('csv', 'WHERE tenant = ?', 'one')).toBe(true)
    const since = start + DAY
    const until = start + 3 * DAY
    const got = burnrate(['export', '--format', 'json', '--since', '2026-10-02', '--until', '2026-10-03'])
    expect(got === expected('json', 'WHERE ts >= ? AND ts < ?', since, until)).toBe(true)
    expect(JSON.parse(got).calls.length).toBeGreaterThan(5000)
  })

  it('-o writes the same bytes to a private file', () => {
    const out = join(dir, 'calls.csv')
    burnrate(['export', '--format', 'csv', '-o', out])
    expect(readFileSync(out, 'utf8') === expected('csv')).toBe(true)
    expect(statSync(out).mode & 0o777).toBe(0o600)
  })

  it.skipIf(process.platform === 'win32')("-o into the shell's process substitution (-o >(gzip > calls.csv.gz)) writes the same bytes into its pipe", () => {
    // bash passes /dev/fd/N, a pipe to `cat`, which copies it to the output read here.
    const r = spawnSync('bash', ['-c', '"$0" "$1" export --format csv --data-dir "$2" -o >(cat) > /dev/null', process.execPath, CLI, data], {
      env: env(),
      encoding: 'utf8',
      maxBuffer: 256 * 2 ** 20,
      timeout: 120_000,
    })
    expect(r.status, r.stderr).toBe(0)
    expect(r.stderr).toBe('')
    expect(r.stdout === expected('csv')).toBe(true)
  })

  it.skipIf(process.platform === 'win32')('-o into a named pipe writes into it, and the pipe stays a pipe', async () => {
    const folder = join(dir, 'fifo')
    mkdirSync(folder)
    const fifo = join(folder, 'calls.csv')
    execFileSync('mkfifo', [fifo])
    // The reader is a process of its own: were the pipe replaced, it would wait for a writer for ever, and is killed.
    const reader = spawn('cat', [fifo], { stdio: ['ignore', 'pipe', 'ignore'] })
    let got = ''
    reader.stdout.on('data', (d) => (got += d))
    const read = new Promise((r) => reader.on('close', r))
    try {
      const child = spawn(process.execPath, [CLI, 'export', '--format', 'csv', '--data-dir', data, '-o', fifo], { env: env(), stdio: ['ignore', 'ignore', 'pipe'] })
      let err = ''
      child.stderr.on('data', (d) => (err += d))
      expect({ code: await new Promise((r) => child.on('close', r)), err }).toEqual({ code: 0, err: '' })
      expect({ fifo: lstatSync(fifo).isFIFO(), files: readdirSync(folder) }).toEqual({ fifo: true, files: ['calls.csv'] })
      await read
      expect(got === expected('csv')).toBe(true)
    } finally {
      reader.kill()
    }
  })
})
