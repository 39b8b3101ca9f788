import { describe, expect, it } from 'vitest'
import { anthropicBatchShape, batchEnded, batchIdOf, relinkResultsUrls } from './anthropic-batch'

describe('Anthropic Message Batches: shapes and results addresses', () => {
  it('names each batch endpoint; only creating one can be refused, reads and cancels are free', () => {
    expect(anthropicBatchShape('POST', '/v1/messages/batches')).toEqual({ endpoint: 'messages.batches.create', relink: true })
    expect(anthropicBatchShape('GET', '/v1/messages/batches')).toMatchObject({ endpoint: 'messages.batches.list', free: true, relink: true })
    expect(anthropicBatchShape('GET', '/v1/messages/batches/msgbatch_1')).toMatchObject({ endpoint: 'messages.batches.retrieve', free: true, relink: true })
    expect(anthropicBatchShape('POST', '/v1/messages/batches/msgbatch_1/cancel')).toMatchObject({ endpoint: 'messages.batches.cancel', free: true })
    expect(anthropicBatchShape('GET', '/v1/messages/batches/msgbatch_1/results')).toEqual({ endpoint: 'messages.batches.results', free: true, lines: true })
    expect(anthropicBatchShape('DELETE', '/v1/messages/batches/msgbatch_1')).toEqual({ endpoint: 'messages.batches.delete', free: true })
    expect(anthropicBatchShape('POST', '/v1/messages/batches/msgbatch_1/results')).toBeNull()
    expect(anthropicBatchShape('POST', '/v1/messages')).toBeNull()
    expect(batchIdOf('/v1/messages/batches/msgbatch_1/results/')).toBe('msgbatch_1')
  })

  it('points every results_url at Burnrate, spaced or not, in one batch or a list; null when there is none', () => {
    const one = '{"id":"b1","results_url":"https://api.anthropic.com/v1/messages/batches/b1/results","x":1}'
    expect(relinkResultsUrls(one, 'http://127.0.0.1:8787')).toBe('{"id":"b1","results_url":"http://127.0.0.1:8787/v1/messages/batches/b1/results","x":1}')
    const list = '{"data":[{"results_url": "https://gw.corp/anthropic/v1/messages/batches/b1/results"},{"results_url":null},{"results_url":"https://api.anthropic.com/v1/messages/batches/b3/results"}]}'
    expect(JSON.parse(relinkResultsUrls(list, 'http://localhost:9/anthropic')!).data.map((b: any) => b.results_url)).toEqual([
      'http://localhost:9/anthropic/v1/messages/batches/b1/results',
      null,
      'http://localhost:9/anthropic/v1/messages/batches/b3/results',
    ])
    expect(relinkResultsUrls('{"results_url":null}', 'http://x')).toBeNull()
    expect(relinkResultsUrls('{"id":"b1"}', 'http://x')).toBeNull()
    // A base that JSON must escape stays valid JSON.
    expect(JSON.parse(relinkResultsUrls(one, 'http://h/"a\\')!).results_url).toBe('http://h/"a\\/v1/messages/batches/b1/results')
  })

  it('remembers when the batches it relinks ended, to date their requests; never a time after now', () => {
    const url = (id: string) => `"results_url":"https://api.anthropic.com/v1/messages/batches/${id}/results"`
    relinkResultsUrls(`{"data":[{"id":"eb1","ended_at":"2026-11-28T10:00:00Z",${url('eb1')}},{"id":"eb2","ended_at":"2999-01-01T00:00:00Z",${url('eb2')}}]}`, 'http://x')
    const now = Date.parse('2026-11-29T00:00:00Z')
    expect(batchEnded('eb1', now)).toBe(Date.parse('2026-11-28T10:00:00Z'))
    expect(batchEnded('eb2', now)).toBe(now)
    expect(batchEnded('never-seen', now)).toBe(now)
  })
})
