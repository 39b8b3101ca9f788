import { chmodSync, existsSync, lchownSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { eventually, request } from '../support/http'
import { baseUrlFor } from '../support/server'
import { loadConfig } from '../../src/main/config/load'
import { silentLogger } from '../../src/main/log'
import { createBurnrate } from '../../src/main/server/server'
import { stringify } from 'yaml'
import { writeFileSync } from 'node:fs'
import { fixture } from '../support/fixtures'
import { runCliCaptured } from '../support/cli'
import { makeCall } from '../dashboard/seed'
import { openDatabase } from '../../src/main/ledger/db'
import { Ledger } from '../../src/main/ledger/ledger'
import { desktopLogger } from '../../src/main/desktop/log-file'
import { writeJsonFile } from '../../src/main/desktop-logic/json-file'

/** The data folder is 0700 and burnrate.db, -wal and -shm 0600, when new and when an old folder is opened. */
const mode = (p: string) => statSync(p).mode & 0o777

let upstream: MockUpstream
let root: string
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: fixture('openai-chat/chat-nonstream-cached.json'),
  }))
  root = mkdtempSync(join(tmpdir(), 'burnrate-modes-'))
})
afterAll(async () => {
  await upstream.close()
  rmSync(root, { recursive: true, force: true })
})

async function callAndCheck(dir: string): Promise<void> {
  // The config lives outside the data folder, so the folder is created by the server itself.
  const configFile = join(root, `config-${Math.random().toString(36).slice(2)}.yaml`)
  writeFileSync(
    configFile,
    stringify({
      server: { port: 0 },
      providers: { openai: { base_url: baseUrlFor('openai', upstream.url) } },
      budgets: { rules: [{ api_key_pattern: 'sk-whole-key-secret-000001', daily_limit_usd: 5, action: 'warn' }] },
    }),
  )
  const server = createBurnrate(loadConfig({ config: configFile, dataDir: dir }, {}), { log: silentLogger })
  const url = await server.listen()
  try {
    const res = await request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-whole-key-secret-000001' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(res.status).toBe(200)
    server.ledger.flush()
    expect(mode(dir)).toBe(0o700)
    for (const f of ['burnrate.db', 'burnrate.db-wal', 'burnrate.db-shm']) {
      expect(existsSync(join(dir, f)), f).toBe(true)
      expect(mode(join(dir, f)).toString(8), f).toBe('600')
    }
  } finally {
    await server.close(2000)
  }
}

describe.skipIf(process.platform === 'win32')('file modes', () => {
  it('a new data folder is 0700 and its database files 0600, even under a permissive umask', async () => {
    const old = process.umask(0o022)
    try {
      await callAndCheck(join(root, 'new', 'Burnrate'))
    } finally {
      process.umask(old)
    }
  })

  it('an existing folder and database made world-readable (an older version) are made private when opened', async () => {
    const dir = join(root, 'old')
    mkdirSync(dir, { mode: 0o755 })
    chmodSync(dir, 0o755)
    const db = new Database(join(dir, 'burnrate.db'))
    db.pragma('journal_mode = WAL')
    db.exec('CREATE TABLE t (x)')
    db.close()
    chmodSync(join(dir, 'burnrate.db'), 0o644)
    expect(mode(dir)).toBe(0o755)
    await callAndCheck(dir)
  })
})

describe.skipIf(process.platform === 'win32')('burnrate export -o', () => {
  let data: string
  beforeAll(() => {
    data = join(root, 'export-data')
    const db = openDatabase(join(data, 'burnrate.db'))
    const ledger = new Ledger(db, { flushIntervalMs: 50, maxPending: 1000, timezone: 'UTC' })
    ledger.record(makeCall({ ts: Date.UTC(2026, 0, 1), tenant: 'acme', cost_usd: 12.5 }))
    ledger.flush()
    ledger.close()
    db.close()
  })

  it('replaces an existing world-readable file with a private one (the export holds every call)', async () => {
    const folder = join(root, 'export-over')
    mkdirSync(folder)
    const out = join(folder, 'calls.csv')
    // e.g. an earlier `burnrate export > calls.csv` under umask 022
    writeFileSync(out, 'old\n')
    chmodSync(out, 0o644)
    const r = await runCliCaptured('export', '--local', '--data-dir', data, '-o', out)
    expect(r.code, r.out).toBe(0)
    expect(mode(out).toString(8)).toBe('600')
    expect(readFileSync(out, 'utf8')).toContain('acme')
    expect(readFileSync(out, 'utf8')).not.toContain('old')
    expect(readdirSync(folder)).toEqual(['calls.csv'])
  })

  it('through a symlink (a dotfile manager, a synced folder) replaces the file it points to and keeps the link', async () => {
    const synced = join(root, 'export-synced')
    const links = join(root, 'export-links')
    mkdirSync(synced)
    mkdirSync(links)
    const real = join(synced, 'calls.csv')
    writeFileSync(real, 'old\n')
    chmodSync(real, 0o644)
    const link = join(links, 'latest.csv')
    symlinkSync(real, link)
    const r = await runCliCaptured('export', '--local', '--data-dir', data, '-o', link)
    expect(r.code, r.out).toBe(0)
    expect(lstatSync(link).isSymbolicLink()).toBe(true)
    expect(readFileSync(real, 'utf8')).toContain('acme')
    expect(mode(real).toString(8)).toBe('600')
    expect({ synced: readdirSync(synced), links: readdirSync(links) }).toEqual({ synced: ['calls.csv'], links: ['latest.csv'] })
  })

  // Making a link another user's takes root (CI runs as root).
  it.runIf(process.getuid?.() === 0)("does not follow another user's link planted in a folder anyone may write (/tmp): the file it points to is left alone", async () => {
    const mine = join(root, 'export-victim')
    const shared = join(root, 'export-shared')
    mkdirSync(mine)
    mkdirSync(shared)
    chmodSync(shared, 0o1777)
    const precious = join(mine, 'authorized_keys')
    writeFileSync(precious, 'ssh-ed25519 AAAA me\n')
    const link = join(shared, 'calls.csv')
    symlinkSync(precious, link)
    lchownSync(link, 65534, 65534)
    const r = await runCliCaptured('export', '--local', '--data-dir', data, '-o', link)
    expect(r.code).toBe(1)
    expect(r.out).toContain(`cannot write ${link}: ${link} is a link another user (uid 65534) made in a folder anyone may write; not followed`)
    expect(readFileSync(precious, 'utf8')).toBe('ssh-ed25519 AAAA me\n')
    expect(readdirSync(mine)).toEqual(['authorized_keys'])
  })

  it('a failed export leaves no temporary file and the target as it was', async () => {
    const folder = join(root, 'export-fail')
    const out = join(folder, 'calls.csv')
    mkdirSync(out, { recursive: true }) // a folder where the file should go: it cannot be replaced
    const r = await runCliCaptured('export', '--local', '--data-dir', data, '-o', out)
    expect(r.code).toBe(1)
    expect(r.out).toContain(`cannot write ${out}`)
    expect(readdirSync(folder)).toEqual(['calls.csv'])
    expect(readdirSync(out)).toEqual([])
  })
})

describe.skipIf(process.platform === 'win32')('desktop app files (userData)', () => {
  it('the log folder is 0700 and burnrate.log 0600, even under umask 0', async () => {
    const userData = join(root, 'userdata-new')
    const old = process.umask(0)
    try {
      desktopLogger(userData)
      await eventually(() => existsSync(join(userData, 'logs', 'burnrate.log')))
    } finally {
      process.umask(old)
    }
    expect(mode(join(userData, 'logs')).toString(8)).toBe('700')
    expect(mode(join(userData, 'logs', 'burnrate.log')).toString(8)).toBe('600')
  })

  it('a log left readable by an older version is made private when opened', () => {
    const userData = join(root, 'userdata-old')
    mkdirSync(join(userData, 'logs'), { recursive: true })
    writeFileSync(join(userData, 'logs', 'burnrate.log'), 'budget rule sk-ant-…abcd reached $12.50\n')
    chmodSync(join(userData, 'logs'), 0o755)
    chmodSync(join(userData, 'logs', 'burnrate.log'), 0o644)
    desktopLogger(userData)
    expect(mode(join(userData, 'logs')).toString(8)).toBe('700')
    expect(mode(join(userData, 'logs', 'burnrate.log')).toString(8)).toBe('600')
  })

  it('state files (notices.json) are 0600, even under umask 0 and over a leftover temporary file', () => {
    const file = join(root, 'userdata-state', 'notices.json')
    const old = process.umask(0)
    try {
      writeJsonFile(file, { shown: ['rule-1'] })
      expect(mode(file).toString(8)).toBe('600')
      expect(mode(join(root, 'userdata-state')).toString(8)).toBe('700')
      // A crash between write and rename leaves the temporary file; its mode does not carry over.
      writeFileSync(`${file}.${process.pid}.tmp`, '')
      chmodSync(`${file}.${process.pid}.tmp`, 0o644)
      writeJsonFile(file, { shown: ['rule-2'] })
      expect(mode(file).toString(8)).toBe('600')
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ shown: ['rule-2'] })
    } finally {
      process.umask(old)
    }
  })
})
