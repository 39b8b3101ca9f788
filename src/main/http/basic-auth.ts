/**
 * How to ask an address that may carry a user name and password (`https://user:pass@…`: a private
 * price mirror, a webhook behind basic auth): the URL without them, which go as an
 * `Authorization: Basic` header instead (undici sends nothing of a URL's credentials, and fetch
 * refuses such a URL: such a server answered every request with 401). The query (`?token=…`)
 * stays in the URL.
 */
export function basicAuthRequest(url: string): { url: string; headers: Record<string, string> } {
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return { url, headers: {} }
  }
  if (!u.username && !u.password) return { url, headers: {} }
  // The URL keeps them percent-encoded (a password with "@", ":" or "/" in it must be); the header carries them as written.
  const user = decodeLeniently(u.username)
  const password = decodeLeniently(u.password)
  u.username = ''
  u.password = ''
  return { url: u.href, headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}` } }
}

/**
 * A URL part percent-decoded, where a "%" not followed by two hex digits (or a sequence that is not
 * UTF-8) is the character itself: a URL takes `alerts:100%@…` as written, and decodeURIComponent
 * threw on it (URI malformed), so that webhook's every alert failed as it was queued, and the
 * webhooks listed after it got none.
 */
function decodeLeniently(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run)
      } catch {
        return run
      }
    })
  }
}
