import { FORM_WINDOW, formDelimiter, occurrences } from './request-body'

/** Bytes of a part's headers read at most. */
const MAX_PART_HEADERS = 4096

/**
 * The uploaded file of a multipart form (the audio of a transcription): a view of its bytes in
 * the body, never a copy. As the form's text fields are read (formFields in ./request-body.ts),
 * only the first and last FORM_WINDOW bytes are searched: the file's part begins in the first
 * (after any small fields the Python SDK sends first), and a part that spans the middle is the
 * file, so it ends at the first delimiter of the last window. Undefined when the form names no
 * boundary or no part with a filename begins in the first window.
 */
export function formFile(body: Buffer, contentType: string): Buffer | undefined {
  const delimiter = formDelimiter(contentType)
  if (!delimiter) return undefined
  const whole = body.length <= 2 * FORM_WINDOW
  const head = whole ? occurrences(body, delimiter, 0, body.length) : occurrences(body, delimiter, 0, FORM_WINDOW)
  for (let i = 0; i < head.length; i++) {
    const headersStart = head[i] + delimiter.length + 2 // past the delimiter's CRLF
    if (body[head[i] + delimiter.length] === 0x2d) return undefined // the closing `--boundary--`
    const headersEnd = body.subarray(headersStart, headersStart + MAX_PART_HEADERS).indexOf('\r\n\r\n')
    if (headersEnd === -1) continue
    const headers = body.toString('latin1', headersStart, headersStart + headersEnd)
    const disposition = /content-disposition:[^\r\n]*/i.exec(headers)?.[0] ?? ''
    if (!/;\s*filename\*?=/i.test(disposition)) continue
    const start = headersStart + headersEnd + 4
    const next = i + 1 < head.length ? head[i + 1] : whole ? -1 : occurrences(body, delimiter, Math.max(start, body.length - FORM_WINDOW), body.length)[0] ?? -1
    // The CRLF before the next delimiter belongs to it.
    return next - 2 >= start ? body.subarray(start, next - 2) : undefined
  }
  return undefined
}
