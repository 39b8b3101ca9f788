import { describe, expect, it } from 'vitest'
import { geminiUsage } from './gemini'
import { GeminiBatchFileMeter, GeminiBatchMeter, downloadFileId, geminiBatchShape } from './gemini-batch'

const answer = (id: string) => ({ modelVersion: 'gemini-2.5-flash', responseId: id, usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5 } })

describe('Gemini Batch API', () => {
  it('names the batch reads (free) and leaves every other path alone', () => {
    expect(geminiBatchShape('GET', '/v1beta/batches/b1')).toEqual({ endpoint: 'batches.get', free: true })
    expect(geminiBatchShape('GET', '/v1beta/batches')).toEqual({ endpoint: 'batches.list', free: true })
    expect(geminiBatchShape('POST', '/v1beta/batches/b1:cancel')).toEqual({ endpoint: 'batches.cancel', free: true })
    expect(geminiBatchShape('DELETE', '/v1beta/batches/b1')).toEqual({ endpoint: 'batches.delete', free: true })
    expect(geminiBatchShape('POST', '/v1beta/models/gemini-2.5-flash:batchGenerateContent')).toBeNull()
    expect(geminiBatchShape('POST', '/v1beta/batches/b1')).toBeNull()
    for (const p of ['/v1beta/files/f1:download', '/download/v1beta/files/f1:download']) {
      expect(geminiBatchShape('GET', p)).toEqual({ endpoint: 'files.download', free: true, lines: true })
      expect(downloadFileId(p)).toBe('f1')
    }
    expect(geminiBatchShape('GET', '/v1beta/files/f1')).toBeNull()
  })

  it('a results file: each line with usage once, keyed by its key or else its place; other lines and files yield nothing', () => {
    const m = new GeminiBatchFileMeter('f1', () => 5)
    m.line(JSON.stringify({ key: 'k1', response: answer('r1') }))
    m.line(JSON.stringify({ key: 'k2', error: { message: 'x' } }))
    m.line(JSON.stringify({ response: answer('r3') }))
    m.line('not json "usageMetadata"')
    expect(m.result().batchResults!.map((x) => [x.key, x.responseId, x.usage.batch])).toEqual([
      ['gemini-batch-file:f1:k:k1', 'r1', true],
      ['gemini-batch-file:f1:i:2', 'r3', true],
    ])
    const other = new GeminiBatchFileMeter('img')
    other.line('\u0089PNG binary bytes')
    expect(other.result().batchResults).toBeUndefined()
  })

  it('reads inline results wherever the answer puts them (response, metadata.output), in a list too, keyed by batch and place', () => {
    const m = new GeminiBatchMeter(() => 1000)
    m.json({
      operations: [
        { name: 'batches/a', done: true, response: { inlinedResponses: { inlinedResponses: [{ response: answer('r1') }, { error: { message: 'x' } }, { response: answer('r3') }] } } },
        { name: 'batches/b', metadata: { model: 'models/gemini-2.5-pro', output: { inlinedResponses: { inlinedResponses: [{ response: { usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1 } } }] } } } },
        { name: 'batches/c', done: true, response: { responsesFile: 'files/out' } },
        { name: 'batches/d', done: false },
      ],
    })
    const r = m.result().batchResults!
    expect(r.map((x) => [x.key, x.model, x.responseId, x.ts, x.usage.batch, x.usage.input_tokens])).toEqual([
      ['gemini-batch:batches/a:0', 'gemini-2.5-flash', 'r1', 1000, true, 10],
      ['gemini-batch:batches/a:2', 'gemini-2.5-flash', 'r3', 1000, true, 10],
      // An answer without a responseId is known by the request's own key (the same at every reader).
      ['gemini-batch:batches/b:0', 'gemini-2.5-pro', 'gemini-batch:batches/b:0', 1000, true, 1],
    ])
    expect(new GeminiBatchMeter().result().batchResults).toBeUndefined()
  })

  it('an embedding batch (asyncBatchEmbedContent): each result with a tokenCount, keyed by batch and place; one without records nothing', () => {
    // As Google's SDK reads it (googleapis/js-genai _batches_converters.ts): `inlinedEmbedContentResponses.inlinedResponses[]`,
    // each `{response: {embedding: {values}, tokenCount}}` or `{error}`; tokenCount an int64 (a string in JSON).
    const m = new GeminiBatchMeter(() => 1000)
    m.json({
      name: 'batches/e',
      done: true,
      metadata: { model: 'models/gemini-embedding-001' },
      response: {
        inlinedEmbedContentResponses: {
          inlinedResponses: [
            { response: { embedding: { values: [0.1, 0.2] }, tokenCount: '12' } },
            { error: { code: 400, message: 'x' } },
            { response: { embedding: { values: [0.1, 0.2] } } },
            { response: { embedding: { values: [0.1, 0.2] }, tokenCount: 7 } },
          ],
        },
      },
    })
    expect(m.result().batchResults!.map((x) => [x.key, x.model, x.endpoint, x.usage.input_tokens, x.usage.output_tokens, x.usage.batch])).toEqual([
      ['gemini-batch:batches/e:0', 'gemini-embedding-001', 'batch.embedContent', 12, 0, true],
      ['gemini-batch:batches/e:3', 'gemini-embedding-001', 'batch.embedContent', 7, 0, true],
    ])
  })

  it('an embedding batch whose results come under inlinedResponses (which the SDKs rename) is read the same', () => {
    const m = new GeminiBatchMeter(() => 1000)
    m.json({
      name: 'batches/w',
      metadata: { model: 'models/gemini-embedding-001', output: { inlinedResponses: { inlinedResponses: [{ response: { embedding: { values: [0.1] }, tokenCount: '5' } }] } } },
    })
    expect(m.result().batchResults!.map((x) => [x.key, x.endpoint, x.usage.input_tokens])).toEqual([['gemini-batch:batches/w:0', 'batch.embedContent', 5]])
  })

  it('a call the Flex tier served is billed at batch rates', () => {
    expect(geminiUsage({ promptTokenCount: 1, candidatesTokenCount: 1, serviceTier: 'flex' })?.batch).toBe(true)
    expect(geminiUsage({ promptTokenCount: 1, candidatesTokenCount: 1, serviceTier: 'standard' })?.batch).toBeUndefined()
    expect(geminiUsage({ promptTokenCount: 1, candidatesTokenCount: 1, serviceTier: 'priority' })?.batch).toBeUndefined()
  })
})
