/**
 * What keeps an agent's calls for Burnrate out of a corporate proxy: Burnrate's address in
 * NO_PROXY, added to what is there. The agents compare names, not what they resolve to, so a
 * loopback address gets both of its names.
 */
export function noProxyEntries(url: string): string {
  const host = new URL(url).hostname
  return host === '127.0.0.1' || host === 'localhost' ? '127.0.0.1,localhost' : host
}

/** The shell line that adds `url` to NO_PROXY: POSIX, or PowerShell on Windows. */
export function noProxyLine(url: string, platform: NodeJS.Platform): string {
  const add = noProxyEntries(url)
  return platform === 'win32' ? `$env:NO_PROXY = ("$env:NO_PROXY,${add}").TrimStart(",")` : `export NO_PROXY="\${NO_PROXY:+$NO_PROXY,}${add}"`
}
