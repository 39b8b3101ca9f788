import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { createLogger } from '../../src/main/log'
import type { Feature } from '../../src/main/server/context'
import { FEATURES } from '../../src/main/server/server'
import { makeCall } from '../dashboard/seed'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { startTestServer } from '../support/server'

// A stop runs the features' close steps (ctx.onClose), then the ledger's last flush. A step that
// threw made `close()` reject there: the ledger was never flushed nor closed (the headless server
// exits at once on that rejection), so what was queued (what the steps before it had recorded
// too) was lost, the later steps never ran, and the data folder stayed claimed.

describe('a stop whose close step throws', () => {
  it('still runs the other steps, flushes and closes the ledger, and says what failed', async () => {
    let later = false
    const steps: Feature = (ctx) => {
      // A step that records (as a hold let go or a settled estimate does), then one that fails, then another.
      ctx.onClose(() => ctx.ledger.record(makeCall({ session: 'recorded-at-close' })))
      ctx.onClose(() => {
        throw new Error('the step broke')
      })
      ctx.onClose(async () => {
        later = true
      })
    }
    const lines: string[] = []
    const t = await startTestServer({ ledger: { flush_interval_ms: 100 } }, undefined, undefined, {
      log: createLogger('info', (l) => lines.push(l)),
      create: { features: [...FEATURES, steps] },
    })
    try {
      // Once every step has run, it says one failed (the headless server then exits 1).
      await expect(t.server.close(0)).resolves.toBe(false)
      // At once (the headless server exits as close settles): the call the step recorded is stored.
      expect(ledgerRows(t.dbFile, "session = 'recorded-at-close'")).toHaveLength(1)
      expect(later).toBe(true)
      expect(lines.some((l) => l.includes('the step broke'))).toBe(true)
      // The folder is let go: another server starts on it.
      const again = await startTestServer({}, undefined, t.dir)
      await again.stop()
    } finally {
      await t.server.close(0).catch(() => {})
      rmSync(t.dir, { recursive: true, force: true })
    }
  })
})

describe('a start refused by a feature after another registered a close step that throws', () => {
  it('still flushes and closes the ledger and lets the folder go', async () => {
    const steps: Feature = (ctx) => {
      ctx.onClose(() => ctx.ledger.record(makeCall({ session: 'recorded-at-refusal' })))
      ctx.onClose(() => {
        throw new Error('the step broke')
      })
    }
    const refuses: Feature = () => {
      throw new Error('this feature refuses the config')
    }
    const unhandled: unknown[] = []
    const onUnhandled = (err: unknown) => unhandled.push(err)
    process.on('unhandledRejection', onUnhandled)
    const dir = mkdtempSync(join(tmpdir(), 'close-step-refused-'))
    try {
      await expect(startTestServer({ ledger: { flush_interval_ms: 100 } }, undefined, dir, { create: { features: [...FEATURES, steps, refuses] } })).rejects.toThrow('refuses the config')
      // The undoing runs in the background: the folder is let go once it is done, the call stored.
      const again = await eventually(() => startTestServer({}, undefined, dir))
      await again.stop()
      expect(ledgerRows(join(dir, DB_FILE), "session = 'recorded-at-refusal'")).toHaveLength(1)
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
