/**
 * What keeps an agent's calls for Burnrate out of a corporate proxy: Burnrate's address in
 * NO_PROXY, added to what is there. The agents compare names, not what they resolve to, so a
 * loopback address gets both of its names, and an IPv6 address both of its spellings: Node's
 * undici matches `[::1]`, Python's requests, curl and Rust's reqwest only `::1`. Shared by the
 * server (burnrate connect's note, the tray's Copy agent setup) and the dashboard's Connect panel.
 */
export function noProxyEntries(url: string): string {
  const host = new URL(url).hostname
  if (host === '127.0.0.1' || host === 'localhost') return '127.0.0.1,localhost'
  return host.startsWith('[') ? `${host.slice(1, -1)},${host}` : host
}

/**
 * The shell lines that add `url` to NO_PROXY. POSIX: both spellings, since agents differ in which
 * one they read first (Gemini CLI's undici `no_proxy`, Codex `NO_PROXY`), starting from whichever
 * is set. PowerShell on Windows, where environment names ignore case: one line.
 */
export function noProxyLines(url: string, platform: string): string {
  const add = noProxyEntries(url)
  if (platform === 'win32') return `$env:NO_PROXY = ("$env:NO_PROXY,${add}").TrimStart(",")`
  return `export NO_PROXY="\${NO_PROXY:-$no_proxy}"\nexport NO_PROXY="\${NO_PROXY:+$NO_PROXY,}${add}" no_proxy="\${NO_PROXY:+$NO_PROXY,}${add}"`
}
