import { request as httpRequest } from 'node:http'

/** The boundary `multipartForm` bodies use. */
export const BOUNDARY = '----burnrate-form-7MA4YWxkTrZu0gW'

/** A multipart form as the OpenAI SDK sends it: the file part (bytes that look like anything), then the text fields. */
export function multipartForm(fields: Record<string, string>, file: Buffer, filename = 'talk.mp3', type = 'audio/mpeg'): Buffer {
  const parts: Buffer[] = [
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`),
    file,
    Buffer.from('\r\n'),
  ]
  for (const [k, v] of Object.entries(fields)) parts.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`))
  parts.push(Buffer.from(`--${BOUNDARY}--\r\n`))
  return Buffer.concat(parts)
}

/** POSTs a `multipartForm` body to `url` with `authorization`; resolves with the status once the answer has been read. */
export function postForm(url: string, body: Buffer, authorization: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': body.length, authorization } },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}
