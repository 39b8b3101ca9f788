import { afterAll } from 'vitest'
import { type FakeDate, useFakeDate } from './fake-date'
import { fixture } from './fixtures'
import { type MockUpstream, startMockUpstream } from './mock-upstream'
import { type TestServer, startTestServer } from './server'

/**
 * The set-up of the tests of a period boundary through a real server on its SQLite file
 * (test/budgets/*-http ones at midnight, reload-stepped-back): a mock upstream answering every call
 * with the recorded `answer` (a fixture's path), the machine's clock faked (Date only, useFakeDate)
 * and set, and a server on the upstream; the server and upstream are stopped after the file.
 */
export function useBoundaryServer(answer: string): { clock: FakeDate; start(at: string, config: Record<string, any>): Promise<TestServer> } {
  const clock = useFakeDate()
  let upstream: MockUpstream | undefined
  let t: TestServer | undefined
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })
  return {
    clock,
    /** The upstream, then the clock at `at`, then the server with `config` (its start the first thing it sees). */
    async start(at, config) {
      const body = fixture(answer)
      upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body }))
      clock.start(at)
      t = await startTestServer(config, upstream.url)
      return t
    },
  }
}
