import { describe, expect, it } from 'vitest'
import { agentProxyFor, proxyProblems, proxyRule, proxyUrl } from './network'

describe('the proxy rule (every way out: HTTP calls, WebSockets)', () => {
  it('is null without a proxy, or with NO_PROXY=*', () => {
    expect(proxyRule({}, {})).toBeNull()
    expect(proxyRule({}, { HTTPS_PROXY: 'http://p:3128', NO_PROXY: '*' })).toBeNull()
    // NO_PROXY=* joined with the config's own entries is still everything (it sent every call to the proxy).
    expect(proxyRule({ no_proxy: ['api.internal'] }, { HTTPS_PROXY: 'http://p:3128', NO_PROXY: '*' })).toBeNull()
  })

  it('reaches an IPv6 address in NO_PROXY directly, bare or in brackets with a port', () => {
    const rule = proxyRule({}, { HTTP_PROXY: 'http://p:3128', NO_PROXY: 'fd00::5,[fd00::6]:8080' })!
    expect(rule('http://[fd00::5]:11434')).toBeNull()
    expect(rule('http://[fd00::6]:8080')).toBeNull()
    expect(rule('http://[fd00::6]:9090')).toBe('http://p:3128')
    expect(rule('http://[fd00::7]')).toBe('http://p:3128')
  })

  it('takes the HTTPS proxy for https and wss, the HTTP one for http and ws (HTTP_PROXY alone serves both)', () => {
    const both = proxyRule({}, { https_proxy: 'http://secure:3128', http_proxy: 'http://plain:3128' })!
    expect(both('https://api.openai.com')).toBe('http://secure:3128')
    expect(both('wss://api.openai.com')).toBe('http://secure:3128')
    expect(both('http://gateway.corp:8080')).toBe('http://plain:3128')
    expect(both('ws://gateway.corp:8080')).toBe('http://plain:3128')
    expect(proxyRule({}, { HTTP_PROXY: 'http://plain:3128' })!('https://api.anthropic.com')).toBe('http://plain:3128')
    expect(proxyRule({}, { HTTPS_PROXY: 'http://secure:3128' })!('http://gateway.corp')).toBeNull()
  })

  it('reaches NO_PROXY hosts directly: a name and its subdomains, a leading dot or *., a port, commas or spaces, any case', () => {
    const rule = proxyRule({}, { HTTPS_PROXY: 'http://p:3128', HTTP_PROXY: 'http://p:3128', NO_PROXY: 'internal.corp, .example.com *.example.org,GPU.lan:11434' })!
    expect(rule('https://internal.corp')).toBeNull()
    expect(rule('https://llm.internal.corp')).toBeNull()
    expect(rule('https://notinternal.corp')).toBe('http://p:3128')
    expect(rule('https://example.com')).toBeNull()
    expect(rule('https://a.example.org')).toBeNull()
    expect(rule('http://gpu.lan:11434')).toBeNull()
    expect(rule('http://gpu.lan:8080')).toBe('http://p:3128')
    expect(rule('wss://api.openai.com')).toBe('http://p:3128')
  })

  it('reaches an address in a NO_PROXY range (CIDR) directly, IPv4 or IPv6; a name is never matched against one', () => {
    const rule = proxyRule({}, { HTTP_PROXY: 'http://p:3128', NO_PROXY: '10.0.0.0/8, 192.168.1.0/24,fd00::/16,[fe80::]/10' })!
    expect(rule('http://10.2.3.4:4000')).toBeNull()
    expect(rule('http://192.168.1.20')).toBeNull()
    expect(rule('http://192.168.2.20')).toBe('http://p:3128')
    expect(rule('http://[fd00::5]:11434')).toBeNull()
    expect(rule('http://[fe80::1]')).toBeNull()
    expect(rule('http://[fd01::5]')).toBe('http://p:3128')
    expect(rule('http://10.example.com')).toBe('http://p:3128')
  })

  it('the config wins over the environment, and its no_proxy adds to NO_PROXY only when the proxy is from the environment', () => {
    const env = { HTTPS_PROXY: 'http://env:3128', NO_PROXY: 'env-direct.corp' }
    const fromConfig = proxyRule({ proxy: 'http://cfg:3128', no_proxy: ['cfg-direct.corp'] }, env)!
    expect(fromConfig('https://api.openai.com')).toBe('http://cfg:3128')
    expect(fromConfig('https://env-direct.corp')).toBe('http://cfg:3128')
    expect(fromConfig('https://cfg-direct.corp')).toBeNull()
    const fromEnv = proxyRule({ no_proxy: ['cfg-direct.corp'] }, env)!
    expect(fromEnv('https://env-direct.corp')).toBeNull()
    expect(fromEnv('https://cfg-direct.corp')).toBeNull()
    expect(fromEnv('https://api.openai.com')).toBe('http://env:3128')
  })

  it("reaches this machine's own addresses directly, whatever NO_PROXY says (a local model server; the proxy cannot reach them)", () => {
    const rule = proxyRule({ proxy: 'http://p:3128' }, {})!
    for (const u of ['http://localhost:11434', 'http://127.0.0.1:1234', 'http://127.1.2.3', 'http://[::1]:8080', 'https://LOCALHOST']) expect(rule(u), u).toBeNull()
    expect(rule('http://10.0.0.5:11434')).toBe('http://p:3128')
    expect(rule('http://localhost.example.com')).toBe('http://p:3128')
  })

  it('matches a port given by default (443 for https and wss, 80 for http and ws)', () => {
    const rule = proxyRule({}, { HTTPS_PROXY: 'http://p:3128', HTTP_PROXY: 'http://p:3128', NO_PROXY: 'api.corp:443,plain.corp:80' })!
    expect(rule('https://api.corp')).toBeNull()
    expect(rule('wss://api.corp')).toBeNull()
    expect(rule('https://api.corp:8443')).toBe('http://p:3128')
    expect(rule('ws://plain.corp')).toBeNull()
  })
})

describe("an agent's calls to Burnrate behind a proxy (agentProxyFor)", () => {
  const url = 'http://127.0.0.1:8787'
  it('names the variable that would carry them to the proxy: any of HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, either case', () => {
    expect(agentProxyFor(url, {})).toBeNull()
    expect(agentProxyFor(url, { HTTPS_PROXY: 'http://proxy.corp:3128' })).toBe('HTTPS_PROXY')
    expect(agentProxyFor(url, { http_proxy: 'http://proxy.corp:3128' })).toBe('http_proxy')
    expect(agentProxyFor(url, { ALL_PROXY: 'socks5://proxy.corp:1080' })).toBe('ALL_PROXY')
    // localhost alone does not exempt 127.0.0.1: the agents compare names, not what they resolve to.
    expect(agentProxyFor(url, { HTTPS_PROXY: 'http://proxy.corp:3128', NO_PROXY: 'localhost,.corp' })).toBe('HTTPS_PROXY')
    // Nor does a range: Node's clients (Claude Code, Gemini CLI) do not read CIDR entries.
    expect(agentProxyFor(url, { HTTPS_PROXY: 'http://proxy.corp:3128', NO_PROXY: '127.0.0.0/8' })).toBe('HTTPS_PROXY')
  })

  it('is null when NO_PROXY lists the address (or is *)', () => {
    expect(agentProxyFor(url, { HTTPS_PROXY: 'http://p:3128', NO_PROXY: 'localhost,127.0.0.1' })).toBeNull()
    expect(agentProxyFor(url, { HTTPS_PROXY: 'http://p:3128', no_proxy: '127.0.0.1:8787' })).toBeNull()
    expect(agentProxyFor(url, { HTTPS_PROXY: 'http://p:3128', NO_PROXY: '*' })).toBeNull()
    expect(agentProxyFor('http://localhost:8787', { HTTPS_PROXY: 'http://p:3128', NO_PROXY: 'localhost' })).toBeNull()
    // Both spellings set: each must list it (Gemini CLI reads no_proxy first, Codex NO_PROXY).
    expect(agentProxyFor(url, { HTTPS_PROXY: 'http://p:3128', NO_PROXY: '127.0.0.1', no_proxy: '.corp' })).toBe('HTTPS_PROXY')
    expect(agentProxyFor(url, { HTTPS_PROXY: 'http://p:3128', NO_PROXY: '127.0.0.1', no_proxy: '.corp,127.0.0.1' })).toBeNull()
  })
})

describe('proxy variables as people set them', () => {
  it('reads a value without a scheme as http://, as curl does; keeps https and SOCKS5; refuses the rest', () => {
    expect(proxyUrl('proxy.corp:3128')).toBe('http://proxy.corp:3128')
    expect(proxyUrl(' 10.0.0.1:8080 ')).toBe('http://10.0.0.1:8080')
    expect(proxyUrl('https://secure.corp:443')).toBe('https://secure.corp:443')
    expect(proxyUrl('socks5://socks.corp:1080')).toBe('socks5://socks.corp:1080')
    // curl's name for a SOCKS5 proxy resolving the host names, as Burnrate's SOCKS5 clients always let it.
    expect(proxyUrl('socks5h://127.0.0.1:1080')).toBe('socks5://127.0.0.1:1080')
    expect(proxyRule({ proxy: 'socks5h://socks.corp:1080' }, {})!('https://api.openai.com')).toBe('socks5://socks.corp:1080')
    expect(proxyProblems({}, { HTTPS_PROXY: 'socks5h://127.0.0.1:1080' })).toEqual([])
    expect(proxyUrl('ftp://files.corp')).toBeNull()
    expect(proxyUrl('http://')).toBeNull()
    expect(proxyRule({}, { https_proxy: 'proxy.corp:3128' })!('https://api.openai.com')).toBe('http://proxy.corp:3128')
  })

  it('ignores a value that is not a proxy, and says so once without its password', () => {
    const env = { HTTPS_PROXY: 'ftp://alice:s3cret@files.corp', HTTP_PROXY: 'proxy.corp:3128' }
    // As if HTTPS_PROXY were not set: https goes through HTTP_PROXY.
    expect(proxyRule({}, env)!('https://api.openai.com')).toBe('http://proxy.corp:3128')
    expect(proxyRule({}, env)!('http://gateway.corp')).toBe('http://proxy.corp:3128')
    const problems = proxyProblems({}, env)
    expect(problems).toEqual(['HTTPS_PROXY=ftp://***@files.corp is not the address of an http(s) or SOCKS5 proxy; it is ignored'])
    expect(proxyProblems({ proxy: 'http://cfg:3128' }, env)).toEqual([])
  })

  it.each([
    ['http://alice:s3cr/et-pw@proxy.corp:3128', 's3cr/et-pw', 'http://***@proxy.corp:3128'], // a "/" in the password, not percent-encoded
    ['alice:s3cret-pw@proxy.corp:99999', 's3cret-pw', '***@proxy.corp:99999'], // no scheme (curl style), a mistyped port
    ['alice:s3cret-pw@proxy corp:3128', 's3cret-pw', '***@proxy corp:3128'], // no scheme, a stray space
    ['http://alice:p@ss@word@proxy.corp:99999', 'ss@word', 'http://***@proxy.corp:99999'], // an "@" in the password
  ])('hides the password of any malformed value: %s', (value, password, shown) => {
    const lines = proxyProblems({}, { HTTPS_PROXY: value })
    expect(lines).toEqual([`HTTPS_PROXY=${shown} is not the address of an http(s) or SOCKS5 proxy; it is ignored`])
    expect(lines[0]).not.toContain(password)
  })
})
