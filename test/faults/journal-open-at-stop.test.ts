import { readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { spillFiles } from '../../src/main/reliability/spill'
import { lockFromAnotherProcess } from '../load/harness'
import { fixture } from '../support/fixtures'
import { eventually, postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

/**
 * SQLite: a stop while the journal's append is still opening its file (the database locked). The
 * stop returned at once, and the journal's file was created (and, when the stop's own spill file
 * held its calls, removed) a moment later: right after a clean stop the data folder held two spill
 * files, or a journal of calls already stored. A clean stop now returns once every file write it
 * started has ended, leaving exactly what the next start needs. The window is held open by a gate
 * on the journal's open (the real open runs once the test lets it go; real files throughout).
 */

const gate = vi.hoisted(() => {
  const g = {
    held: false,
    events: [] as string[],
    reached: null as null | (() => void),
    reachedP: null as null | Promise<void>,
    release: () => {},
    released: Promise.resolve(),
    hold(): void {
      g.held = true
      g.events = []
      g.reachedP = new Promise((r) => (g.reached = r))
      g.released = new Promise((r) => (g.release = r))
    },
  }
  return g
})

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>()
  const open: typeof real.open = async (file, ...rest) => {
    if (!gate.held || !String(file).includes('ledger-spill-')) return real.open(file, ...rest)
    gate.held = false
    gate.reached?.()
    await gate.released
    const h = await real.open(file, ...rest)
    gate.events.push('journal opened')
    return h
  }
  return { ...real, open, default: { ...real, open } }
})

let upstream: MockUpstream
beforeAll(async () => {
  upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }))
})
afterAll(() => upstream.close())

async function call(t: TestServer, session: string): Promise<void> {
  const r = await postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-open-at-stop-000000001', 'x-burnrate-session': session })
  expect(r.status).toBe(200)
}

function sessions(file: string): string[] {
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return db.prepare('SELECT session FROM calls ORDER BY session').pluck().all() as string[]
  } finally {
    db.close()
  }
}

function spilledSessions(file: string): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"session"'))
    .map((l) => JSON.parse(l).session as string)
}

describe('a stop while the journal is opening its file', () => {
  it('with the database still locked: returns once the journal is gone, leaving the stop spill file alone', async () => {
    const t = await startTestServer({}, upstream.url)
    await call(t, 'before')
    await eventually(() => sessions(t.dbFile).length === 1)
    const lock = await lockFromAnotherProcess(t.dbFile)
    let locked = true
    const unlock = async () => {
      if (locked) await lock.release()
      locked = false
    }
    let stopping: Promise<void> | null = null
    try {
      gate.hold()
      await call(t, 's1')
      // The journal's append has asked for its file: it waits at the gate.
      await gate.reachedP
      stopping = t.stop().then(() => {
        gate.events.push('stopped')
      })
      // The stop kept the waiting call in a spill file of its own; the journal's open goes on now.
      await eventually(() => spillFiles(t.dir).length === 1)
      gate.release()
      await stopping
      const files = spillFiles(t.dir)
      expect(gate.events).toEqual(['journal opened', 'stopped'])
      expect(files).toHaveLength(1)
      expect(spilledSessions(files[0])).toEqual(['s1'])
    } finally {
      gate.release()
      await stopping
      await unlock()
    }
    const again = await t.restart()
    try {
      expect(spillFiles(t.dir)).toEqual([])
      expect(sessions(t.dbFile)).toEqual(['before', 's1'])
    } finally {
      await again.cleanup()
    }
  })

  it('with the database writable again: the last flush stores the call, and no journal is left', async () => {
    const t = await startTestServer({}, upstream.url)
    await call(t, 'before')
    await eventually(() => sessions(t.dbFile).length === 1)
    const lock = await lockFromAnotherProcess(t.dbFile)
    let locked = true
    const unlock = async () => {
      if (locked) await lock.release()
      locked = false
    }
    let stopping: Promise<void> | null = null
    try {
      gate.hold()
      await call(t, 's1')
      await gate.reachedP
      await unlock()
      stopping = t.stop().then(() => {
        gate.events.push('stopped')
      })
      // The stop's last flush stored the call (the journal is not needed any more).
      await eventually(() => sessions(t.dbFile).length === 2)
      gate.release()
      await stopping
      await eventually(() => gate.events.includes('journal opened'))
      expect(gate.events).toEqual(['journal opened', 'stopped'])
      expect(spillFiles(t.dir)).toEqual([])
    } finally {
      gate.release()
      await stopping
      await unlock()
    }
    const again = await t.restart()
    try {
      expect(sessions(t.dbFile)).toEqual(['before', 's1'])
    } finally {
      await again.cleanup()
    }
  })

  it('with the open never ending (a stuck disk): the stop still returns, and the next start stores the call once', async () => {
    const t = await startTestServer({}, upstream.url)
    await call(t, 'before')
    await eventually(() => sessions(t.dbFile).length === 1)
    const lock = await lockFromAnotherProcess(t.dbFile)
    let locked = true
    const unlock = async () => {
      if (locked) await lock.release()
      locked = false
    }
    try {
      gate.hold()
      await call(t, 's1')
      await gate.reachedP
      // The gate is not let go: the stop gives up waiting on the journal (after 5 s) rather than hang the quit.
      await t.stop()
      gate.events.push('stopped')
      expect(gate.events).toEqual(['stopped'])
      expect(spillFiles(t.dir).length).toBeGreaterThanOrEqual(1)
      // The disk comes back: the journal's open ends late, after the stop.
      gate.release()
      await eventually(() => gate.events.includes('journal opened'))
    } finally {
      gate.release()
      await unlock()
    }
    const again = await t.restart()
    try {
      await eventually(() => sessions(t.dbFile).length === 2)
      expect(sessions(t.dbFile)).toEqual(['before', 's1'])
    } finally {
      await again.cleanup()
    }
  }, 60_000)
})
