import { afterAll, beforeAll } from 'vitest'
import { type Reply } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { type Answers, backgroundResponder } from '../providers/background-support'
import { jobRules, startJob } from './support'

/**
 * The background rehold tests' server, for the test file (beforeAll; stopped afterAll): an upstream
 * answering background jobs, and a server whose one block rule (jobRules) covers `pattern`'s keys'
 * o3-deep-research* jobs. `start`: a job `id` for `key`; `restart`: the server, once stopped, started
 * again on its data folder with the rule on `model`'s jobs; `dir`: its data folder.
 */
export function backgroundServer(pattern: string): {
  start: (key: string, id: string) => Promise<Reply>
  stop: () => Promise<void>
  restart: (model: string) => Promise<void>
  dir: () => string
} {
  const answers: Answers = new Map()
  let upstream: MockUpstream
  let t: TestServer
  const config = (model: string) => ({ timezone: 'UTC', budgets: { rules: jobRules(pattern, model) } })
  beforeAll(async () => {
    upstream = await startMockUpstream(backgroundResponder(answers))
    t = await startTestServer(config('o3-deep-research*'), upstream.url)
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })
  return {
    start: (key, id) => startJob(t, key, id),
    stop: () => t.stop(),
    restart: async (model) => {
      t = await startTestServer(config(model), upstream.url, t.dir)
    },
    dir: () => t.dir,
  }
}
