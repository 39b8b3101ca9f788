import { afterAll, beforeAll } from 'vitest'

/**
 * A stand-in (a server, a proxy) started before the file's tests and closed after them. The
 * function returned gives it; call it inside the tests (before the file's beforeAll has run it
 * throws).
 */
export function startedForFile<T extends { close(): Promise<void> }>(start: () => Promise<T>): () => T {
  let started: T | undefined
  beforeAll(async () => {
    started = await start()
  })
  afterAll(async () => {
    await started?.close()
  })
  return () => {
    if (!started) throw new Error('startedForFile: not started yet (call it inside a test)')
    return started
  }
}
