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
  const user = decodeURIComponent(u.username)
  const password = decodeURIComponent(u.password)
  u.username = ''
  u.password = ''
  return { url: u.href, headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}` } }
}
