/** How long a scrape waits for what a gauge reads to be read from the database (a PostgreSQL instance starting). */
export const READ_WAIT_MS = 2000

/**
 * Whether `ready()` holds, waiting up to `ms` for it. A gauge whose source is not read yet (a
 * PostgreSQL instance reads the stored calls without holding up its start) waits a moment, then
 * leaves its samples out rather than report what only this process counted since it started.
 */
export async function within(ready: () => boolean, ms = READ_WAIT_MS): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!ready() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  return ready()
}
