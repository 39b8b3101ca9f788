/** A start-up problem the person can fix (a port in use, a folder not writable): one line, no stack. */
export class StartupError extends Error {
  override name = 'StartupError'
}
