import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createLogger } from '../../src/main/log'
import { readSpill, spillFiles } from '../../src/main/reliability/spill'
import { eventually, postJson, request } from '../support/http'
import { sessionCounts, until, usePostgres } from '../support/pg-harness'
import { canMount, fillDisk, mountTmpfs, unmount } from '../support/tmpfs'
import { fixture } from '../support/fixtures'

// While PostgreSQL is away the calls are appended to this instance's spill journal, so a kill
// keeps them. On a nearly full disk an append may take only part of what it is given without an
// error: the journal counted every call as on disk (health's `storage.spilled`) while the file
// held a few and a torn line, and a stop said all were kept. Needs root (a real small tmpfs).

const h = usePostgres({
  upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }),
})
const call = (url: string, session: string) =>
  postJson(`${url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-journal-full-0001', 'x-burnrate-session': `${session}-${'x'.repeat(150)}` })

describe.skipIf(!canMount)('the spill journal on a disk that fills up (PostgreSQL away)', () => {
  it('counts as spilled only the calls whole in the file, and a stop says how many it kept; the restart stores those', async () => {
    const mount = mountTmpfs(4096)!
    try {
      const dir = join(mount, 'data')
      mkdirSync(dir)
      const lines: string[] = []
      const url = h.database()
      const t = await h.server({ url, dir, log: createLogger('info', (l) => lines.push(l)) })
      const store = h.store(url)
      expect((await call(t.url, 'before')).status).toBe(200)
      await until('the first call in PostgreSQL', async () => Object.keys(await sessionCounts(store)).length === 1)
      h.pg.stopServer()
      let down = true
      try {
        expect((await call(t.url, 'away-0')).status).toBe(200)
        await until('the journal holds the first call', () => spillFiles(dir).length === 1 && readSpill(spillFiles(dir)[0]).length === 1)
        const filler = join(mount, 'filler')
        fillDisk(filler, 4096)
        for (let i = 1; i <= 20; i++) expect((await call(t.url, `away-${i}`)).status).toBe(200)
        // Every call was tried on disk (spilled, or found not to fit).
        await eventually(async () => {
          const s = (await request(`${t.url}/api/health`)).json()
          return s.ledger.pending === 21 && lines.some((l) => l.includes('cannot be spilled')) ? true : s.storage.spilled === 21 ? true : undefined
        })
        const health = (await request(`${t.url}/api/health`)).json()
        const onDisk = readSpill(spillFiles(dir)[0]).length
        expect(onDisk).toBeLessThan(21)
        expect(health.storage.spilled).toBe(onDisk)
        await t.stop()
        const kept = readSpill(spillFiles(dir)[0]).length
        const said = lines.find((l) => / call\(s\) kept in /.test(l))
        expect(said).toContain(`; ${kept} call(s) kept in`)
        expect(lines.find((l) => l.includes('could not be saved anywhere'))).toContain(`${21 - kept} call(s) could not be saved anywhere`)
        rmSync(filler)
        h.pg.startServer()
        down = false
        // The restart stores the calls the file kept, each once.
        const again = await h.server({ url, dir })
        await until('the kept calls stored', async () => spillFiles(dir).length === 0)
        const counts = await sessionCounts(store)
        expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(1 + kept)
        expect(Math.max(...Object.values(counts))).toBe(1)
        await again.stop()
      } finally {
        if (down) h.pg.startServer()
      }
    } finally {
      unmount(mount)
    }
  }, 120_000)
})
