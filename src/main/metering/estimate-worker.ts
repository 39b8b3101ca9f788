/**
 * The estimate thread (built to out/main/estimate-worker.js, started by ./estimator.ts):
 * counts the tokens of responses that carried no usage, so the tokenizer never runs on the
 * thread that serves calls. One request at a time, each bounded (./token-count.ts).
 */
import { parentPort } from 'node:worker_threads'
import type { CountReply, CountRequest } from './estimator'
import { type Count, type EncodingName, countSample, loadCount } from './token-count'

const counts = new Map<EncodingName, Promise<Count>>()

function countFor(encoding: EncodingName): Promise<Count> {
  let c = counts.get(encoding)
  if (!c) {
    c = loadCount(encoding)
    counts.set(encoding, c)
  }
  return c
}

parentPort?.on('message', (m: CountRequest) => {
  if (m.type === 'warm') {
    void countFor(m.encoding).catch(() => {})
    return
  }
  countFor(m.encoding).then(
    (count) => {
      let reply: CountReply
      try {
        reply = { id: m.id, counts: m.samples.map((s) => countSample(count, s)) }
      } catch (err) {
        reply = { id: m.id, message: (err as Error).message }
      }
      parentPort?.postMessage(reply)
    },
    (err: Error) => parentPort?.postMessage({ id: m.id, message: err.message } satisfies CountReply),
  )
})
