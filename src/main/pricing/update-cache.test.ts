import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it, vi } from 'vitest'

/** What the cache write did, in order: each file handle's sync (with the path it was opened at) and each rename. */
const steps: string[] = []
let failSync = false

vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs/promises')>()
  const open: typeof fs.open = async (path, ...rest) => {
    const h = await fs.open(path, ...rest)
    const sync = h.sync.bind(h)
    h.sync = async () => {
      if (failSync && String(path).endsWith('.tmp')) throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' })
      await sync()
      steps.push(`sync ${String(path)}`)
    }
    return h
  }
  return { ...fs, default: { ...fs, open }, open }
})

vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>()
  const renameSync: typeof fs.renameSync = (from, to) => {
    fs.renameSync(from, to)
    steps.push(`rename ${String(from)} -> ${String(to)}`)
  }
  return { ...fs, default: { ...fs, renameSync }, renameSync }
})

const { PRICES_FILE, writeCache } = await import('./update-cache')

/**
 * The kept copy of the price data is the last good data a start uses. Written to a temporary file
 * and renamed, but never synced, a power cut after the rename could leave prices.json empty or
 * cut short (the rename reached the disk before the data): the next start then fell back to the
 * bundled data. The data is synced to the disk before the rename, and the rename after it.
 */
describe('the kept copy of the price data', () => {
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-cache-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, PRICES_FILE)
  const copy = (at: string) => ({ updated_at: at, fetched_at: at, providers: [] })

  it('is on the disk before it replaces the last copy, and the rename is made durable too', async () => {
    const failed: string[] = []
    await writeCache(file, copy('2026-11-20T08:00:00.000Z'), (m) => failed.push(m))
    expect(failed).toEqual([])
    const tmp = /^sync (.+\.tmp)$/.exec(steps[0] ?? '')?.[1]
    expect(tmp?.startsWith(`${file}.`)).toBe(true)
    expect(steps).toEqual([`sync ${tmp}`, `rename ${tmp} -> ${file}`, `sync ${dir}`])
    expect(JSON.parse(readFileSync(file, 'utf8')).updated_at).toBe('2026-11-20T08:00:00.000Z')
    expect(statSync(file).mode & 0o777).toBe(0o600)
  })

  it('a copy that cannot be synced does not replace the last one', async () => {
    failSync = true
    const failed: string[] = []
    await writeCache(file, copy('2026-11-21T08:00:00.000Z'), (m) => failed.push(m))
    failSync = false
    expect(failed).toEqual([expect.stringContaining('EIO')])
    expect(JSON.parse(readFileSync(file, 'utf8')).updated_at).toBe('2026-11-20T08:00:00.000Z')
    expect(readdirSync(dir)).toEqual([PRICES_FILE])
  })

  it('two writers at once (the server and burnrate import) both write their copy whole', async () => {
    const failed: string[] = []
    await Promise.all(['2026-11-22T08:00:00.000Z', '2026-11-23T08:00:00.000Z'].map((at) => writeCache(file, copy(at), (m) => failed.push(m))))
    expect(failed).toEqual([])
    expect(['2026-11-22T08:00:00.000Z', '2026-11-23T08:00:00.000Z']).toContain(JSON.parse(readFileSync(file, 'utf8')).updated_at)
    expect(readdirSync(dir)).toEqual([PRICES_FILE])
  })
})
