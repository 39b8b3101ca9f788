import { type WriteStream, createWriteStream, openSync, renameSync, rmSync, statSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { basename, dirname, join } from 'node:path'
import { realTarget } from '../connect/files'
import { CliError } from './context'

/**
 * Writes `path` through `write` as a file only its owner may read (0600), whether or not it
 * existed: an existing file keeps its mode when opened, so the output goes to a new temporary
 * file in the same folder (created exclusively, so never someone else's file or a link) that
 * replaces `path` once `write` has finished. On failure the temporary file is removed and
 * `path` is left as it was. Through a symlink, the file it points to is replaced and the link
 * stays. A named pipe or device (`-o >(gzip > x.gz)`, `/dev/stdout`) is written as it is.
 */
export async function writePrivateFile(path: string, write: (sink: WriteStream) => Promise<void>): Promise<void> {
  // Errors name the file asked for, not the temporary one.
  const cannot = (err: unknown) => new CliError(`cannot write ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`)
  if (isStream(path)) return writeInPlace(path, write, cannot)
  // The folder of the file itself, so a rename there replaces it, not a link to it.
  let target: string
  try {
    target = realTarget(path)
  } catch (err) {
    throw new CliError(`cannot write ${path}: ${(err as Error).message}`)
  }
  const tmp = join(dirname(target), `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`)
  let fd: number
  try {
    fd = openSync(tmp, 'wx', 0o600)
  } catch (err) {
    throw cannot(err)
  }
  const sink = createWriteStream(tmp, { fd })
  try {
    await write(sink)
    if (!sink.writableEnded) sink.end()
    // Renamed once closed (Windows cannot rename an open file).
    if (!sink.closed) await once(sink, 'close')
    try {
      renameSync(tmp, target)
    } catch (err) {
      throw cannot(err)
    }
  } catch (err) {
    sink.destroy()
    rmSync(tmp, { force: true })
    throw err
  }
}

/**
 * Whether `path` (through its links) is a named pipe, device or socket: there is no file to
 * replace (a pipe's /dev/fd/N is in a folder nothing can be created in, and renaming over
 * /dev/stdout would replace the device), and nothing in it is kept on disk.
 */
function isStream(path: string): boolean {
  try {
    const st = statSync(path)
    return st.isFIFO() || st.isCharacterDevice() || st.isSocket()
  } catch {
    return false
  }
}

/** Writes to `path` itself, opened without blocking the process while a pipe waits for its reader. */
async function writeInPlace(path: string, write: (sink: WriteStream) => Promise<void>, cannot: (err: unknown) => CliError): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>>
  try {
    handle = await open(path, 'w')
  } catch (err) {
    throw cannot(err)
  }
  const sink = handle.createWriteStream()
  try {
    await write(sink)
    if (!sink.writableEnded) sink.end()
    if (!sink.closed) await once(sink, 'close')
  } catch (err) {
    sink.destroy()
    throw err
  }
}
