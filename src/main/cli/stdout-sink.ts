import { Writable as NodeWritable } from 'node:stream'
import type { Writable } from './context'

/**
 * The export's way to stdout: chunks go out as the bytes they are, and a stdout that asks to
 * wait (a pipe whose reader is slow: `| less`) is waited for, so the export is never held in
 * memory. The wait ends with stdout too: when it fails (`| head -1` exited: EPIPE; a full disk)
 * or closes, the sink fails with that error, so the export stops, gives back what it holds (a
 * PostgreSQL snapshot transaction, the server's answer) and the command ends; waiting for a
 * 'drain' of a stream that is gone would wait for ever.
 */
export function stdoutSink(out: Writable): NodeWritable {
  let gone: Error | null = null
  const sink = new NodeWritable({
    write(chunk, _enc, cb) {
      if (gone) return cb(gone)
      if (out.write(chunk) !== false || !out.once) return cb()
      out.once('drain', () => cb())
    },
    destroy(err, cb) {
      out.off?.('error', onError)
      out.off?.('close', onClose)
      cb(err)
    },
  })
  const fail = (err: Error) => {
    gone ??= err
    sink.destroy(gone)
  }
  const onError = (err: Error) => fail(err)
  const onClose = () => fail(Object.assign(new Error('stdout was closed'), { code: 'EPIPE' }))
  out.on?.('error', onError)
  out.on?.('close', onClose)
  sink.once('finish', () => {
    out.off?.('error', onError)
    out.off?.('close', onClose)
  })
  return sink
}

/** Whether `err` says the reader of stdout went away (`| head`): the output's end, not a failure. */
export function readerGone(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === 'EPIPE'
}
