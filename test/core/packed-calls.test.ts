import { describe, expect, it } from 'vitest'
import { CALL_COLUMNS, callValues } from '../../src/main/ledger/columns'
import { packCalls, unpackCalls } from '../../src/main/ledger/packed'
import type { CallRecord } from '../../src/main/ledger/record'
import { makeCall } from '../dashboard/seed'

/**
 * Batches cross to the ledger's write thread packed (numbers in one array, texts by index):
 * what the thread writes from them must be exactly what the call objects would have written.
 */
describe('packed calls for the write thread', () => {
  const rows: CallRecord[] = [
    makeCall({ cost_usd: 0.1 + 0.2, latency_ms: 12.345678901234, session: 'sess-1', agent: 'claude-code', requested_model: 'claude-sonnet-4-5' }),
    makeCall({ cost_usd: 1e-12, status: 499, error: 'client_aborted', streamed: true, estimated: true, priced: false, requested_model: null }),
    makeCall({ ts: 2 ** 52 + 1, input_tokens: 2 ** 53 - 1, response_id: 'msg_01', billing: 'subscription', project: '/home/ä/项目', member: 'bob' }),
    makeCall({ tenant: 'acme', session: 'sess-1', agent: 'claude-code', source: 'import', model: '' }),
    makeCall({ usage_extra: '{"web_searches":2,"extra":{"input_audio_tokens":400}}' }),
    makeCall({ usage_extra: null }),
    // A call key (given to a batch handed to the thread: ledger/call-keys.ts) crosses too.
    { ...makeCall({ session: 'keyed' }), call_key: 'mv3k2x0aB-_x1Yz.1k' },
  ]

  it('carries every column exactly, a left-out field stays left out (its column default applies)', () => {
    const packed = packCalls(rows)
    expect(packed).not.toBeNull()
    const back = unpackCalls(structuredClone(packed!))
    expect(back).toEqual(rows)
    for (let i = 0; i < rows.length; i++) {
      expect(callValues(back[i], [])).toEqual(callValues(rows[i], []))
      expect(Object.keys(back[i]).sort()).toEqual(Object.keys(rows[i]).sort())
    }
    expect(callValues(back[0], []).length).toBe(CALL_COLUMNS.length)
    // Each distinct text is sent once.
    expect(packed!.texts.filter((t) => t === 'sess-1')).toHaveLength(1)
  })

  it('a batch with a value the packed form would not carry exactly goes as objects', () => {
    expect(packCalls([rows[0], { ...rows[1], cost_usd: '0.5' as unknown as number }])).toBeNull()
    expect(packCalls([{ ...rows[0], streamed: 1 as unknown as boolean }])).toBeNull()
    expect(packCalls([{ ...rows[0], model: 42 as unknown as string }])).toBeNull()
    expect(packCalls([{ ...rows[0], call_key: 7 as unknown as string }])).toBeNull()
    // null where the schema wants text is carried as null: the database refuses it as it would have.
    const nulled = packCalls([{ ...rows[0], provider: null as unknown as string }])
    expect(unpackCalls(nulled!)[0].provider).toBeNull()
  })
})
