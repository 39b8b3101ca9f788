import { chmodSync, chownSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { type Logger, silentLogger } from '../../src/main/log'
import { type TestServer, startTestServer } from '../support/server'

/**
 * A data folder other users may write (a shared folder, or a filesystem without Unix owners and
 * modes where every file looks anyone's): Burnrate trusts only the files in it that are provably
 * the user's own, so there it refuses files it wrote itself. The server says so once, at start,
 * naming the folder, why, what it will not trust and the fix, and `/api/health` shows it.
 */
const OTHER = 65534 // nobody
const asRoot = process.getuid?.() === 0
let servers: TestServer[] = []
let dirs: string[] = []
afterEach(async () => {
  for (const t of servers) await t.cleanup().catch(() => {})
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
  servers = []
  dirs = []
})

async function start(dir: string): Promise<{ t: TestServer; warns: string[]; health: Record<string, any> }> {
  const warns: string[] = []
  const log: Logger = { ...silentLogger, warn: (m) => warns.push(m) }
  const t = await startTestServer({}, undefined, dir, { log })
  servers.push(t)
  const health = (await (await fetch(`${t.url}/api/health`)).json()) as Record<string, any>
  return { t, warns, health }
}

const folder = (mode: number): string => {
  const d = mkdtempSync(join(tmpdir(), 'burnrate-datadir-'))
  dirs.push(d)
  chmodSync(d, mode)
  return d
}

describe('the data folder itself, checked once at start', () => {
  it.runIf(asRoot)("another user's world-writable folder: one warning naming it, why, what is not trusted and the fix; /api/health shows it", async () => {
    const dir = folder(0o777)
    chownSync(dir, OTHER, OTHER)
    const { warns, health } = await start(dir)
    const about = warns.filter((w) => w.includes(dir) && /shared with other users/.test(w))
    expect(about, warns.join('\n')).toHaveLength(1)
    const w = about[0]
    expect(w).toContain('it belongs to another user (uid 65534)')
    expect(w).toMatch(/mode 0[0-7]{3}, owner uid 65534/)
    for (const name of ['config.yaml', 'server.lock', 'agent-connections.json', 'agent-backups/', 'ledger-spill-*.jsonl', 'prices.json']) expect(w).toContain(name)
    expect(w).toMatch(/0700/)
    for (const how of ['--data-dir', 'BURNRATE_DATA_DIR', 'data_dir']) expect(w).toContain(how)
    // Not a refusal: the server runs and its ledger is used.
    expect(health.status).toBe('ok')
    expect(health.data_dir).toEqual({ shared: true, reason: 'it belongs to another user (uid 65534)', mode: expect.stringMatching(/^0[0-7]{3}$/), owner_uid: OTHER })
    expect(JSON.stringify(health)).not.toContain(dir)
  })

  for (const mode of [0o700, 0o777]) {
    it(`a folder of the user's own made ${mode.toString(8)}: no warning, and /api/health says it is not shared`, async () => {
      const dir = folder(mode)
      const { warns, health } = await start(dir)
      expect(warns.filter((w) => w.includes('shared with other users')), warns.join('\n')).toEqual([])
      expect(health.data_dir).toEqual({ shared: false })
      // A world-writable folder of the user's own is made private at start (../../src/main/ledger/db.ts): nothing to warn of.
      expect(statSync(dir).mode & 0o777).toBe(0o700)
    })
  }
})
