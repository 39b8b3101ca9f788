import { afterEach, describe, expect, it, vi } from 'vitest'
import { PgLedger } from '../../src/main/ledger/pg/pg-ledger'
import type { CallRecord } from '../../src/main/ledger/record'
import { createLogger } from '../../src/main/log'
import { until, usePostgres } from '../support/pg-harness'

/**
 * PostgreSQL away and the data folder's disk not answering (a hung network mount): the spill
 * journal's open of its file never ends. On SQLite a stop waits at most 5 s for the journal's file
 * work (src/main/server/journal-idle.ts); on PostgreSQL the stop (and a second signal's exit, which
 * waits behind it) waited for it for good, and the process could only be killed. The gate below
 * holds the open (the real one runs once the test lets it go); PostgreSQL is a port nothing listens on.
 */

const gate = vi.hoisted(() => {
  const g = {
    held: false,
    reached: false,
    release: () => {},
    released: Promise.resolve(),
    hold(): void {
      g.held = true
      g.reached = false
      g.released = new Promise((r) => (g.release = r))
    },
  }
  return g
})

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>()
  const open: typeof real.open = async (file, ...rest) => {
    if (gate.held && String(file).includes('ledger-spill-')) {
      gate.reached = true
      await gate.released
    }
    return real.open(file, ...rest)
  }
  return { ...real, open, default: { ...real, open } }
})

const h = usePostgres({ upstream: false })

afterEach(() => {
  gate.held = false
  gate.release()
})

function call(session: string): CallRecord {
  return {
    ts: Date.now(), provider: 'openai', model: 'gpt-4o-mini', endpoint: 'chat.completions', api_key_hash: 'h1', key_hint: 'sk-…abcd',
    tenant: '', agent: 'a', session, status: 200, streamed: false, input_tokens: 10, output_tokens: 5, cache_read_tokens: 0,
    cache_write_tokens: 0, cache_write_1h_tokens: 0, reasoning_tokens: 0, cost_usd: 0.001, priced: true, estimated: false,
    latency_ms: 12, error: null,
  }
}

/** A ledger on a PostgreSQL that cannot be reached, whose spill journal is opening its file (held by the gate). */
async function stuckLedger(lines: string[]): Promise<PgLedger> {
  gate.hold()
  const away = h.store('postgres://burnrate:hunter2@127.0.0.1:1/none')
  const ledger = new PgLedger(away, {
    flushIntervalMs: 20, maxPending: 10_000, timezone: 'UTC', dataDir: h.tempDir('burnrate-pg-stuck-'), secret: 'hunter2', closeWaitMs: 300, keepWaitMs: 300,
    log: createLogger('info', (l) => lines.push(l)),
  }).start()
  ledger.record(call('s1'))
  await until('the spill journal opening its file', () => gate.reached)
  return ledger
}

describe('a stop while PostgreSQL is away and the spill file cannot be written (a disk that never answers)', () => {
  it('returns, and says the calls not on disk may be lost', async () => {
    const lines: string[] = []
    const ledger = await stuckLedger(lines)
    expect(await ledger.close()).toBe(false)
    expect(lines.join('\n')).toMatch(/error .*spill file.*had not ended .* after the stop.*1 call\(s\)/)
  })

  it("a second signal's exit returns too", async () => {
    const lines: string[] = []
    const ledger = await stuckLedger(lines)
    await ledger.keepQueued()
    expect(lines.join('\n')).toMatch(/error .*spill file.*had not ended/)
  })
})
