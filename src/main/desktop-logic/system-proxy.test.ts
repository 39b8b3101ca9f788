import { describe, expect, it } from 'vitest'
import { parseConfigText } from '../config/load'
import type { Config } from '../config/schema'
import { proxyRule } from '../http/network'
import { outboundOrigins, proxyOfPac, systemNetwork } from './system-proxy'

const config = (yaml = ''): Config => ({ ...parseConfigText(yaml, 'test'), data_dir: '/tmp', source: null }) as Config

describe("the system's proxy settings (desktop app)", () => {
  it('reads Electron\'s answer in its order: the first HTTP(S) or SOCKS5 proxy, DIRECT, or nothing usable (SOCKS4)', () => {
    expect(proxyOfPac('PROXY proxy.corp:3128; DIRECT')).toBe('http://proxy.corp:3128')
    expect(proxyOfPac('HTTPS secure.corp:443')).toBe('https://secure.corp:443')
    expect(proxyOfPac('DIRECT')).toBe('DIRECT')
    expect(proxyOfPac('SOCKS5 socks.corp:1080; PROXY proxy.corp:8080')).toBe('socks5://socks.corp:1080')
    expect(proxyOfPac('SOCKS socks.corp:1080; DIRECT')).toBe('DIRECT')
    expect(proxyOfPac('SOCKS socks.corp:1080')).toBeNull()
  })

  it("asks for every address Burnrate calls out to, not this machine's own", () => {
    const origins = outboundOrigins(
      config(`providers:
  mistral: { base_url: "http://localhost:11434/v1" }
  openai: { base_url: "https://gw.corp.example:8443/v1" }
pricing: { update_url: "https://prices.example.com/data.json" }
alerts: { webhooks: [{ url: "https://hooks.slack.com/services/x" }] }
team: { url: "https://burnrate.corp.example", token: "t" }
otel: { endpoint: "https://otlp.example.com:4318" }
`),
    )
    expect(origins).toContain('https://api.anthropic.com')
    expect(origins).toContain('https://gw.corp.example:8443')
    expect(origins).not.toContain('https://api.openai.com')
    expect(origins.some((o) => o.includes('localhost'))).toBe(false)
    for (const o of ['https://prices.example.com', 'https://hooks.slack.com', 'https://burnrate.corp.example', 'https://otlp.example.com:4318']) expect(origins).toContain(o)
  })

  it('gives the proxy most addresses go through, and the hosts the system reaches directly', async () => {
    const answers: Record<string, string> = { 'https://gw.corp.example:8443': 'DIRECT', 'https://api.anthropic.com': 'SOCKS s:1080' }
    const seen: string[] = []
    const net = await systemNetwork(config('providers:\n  openai: { base_url: "https://gw.corp.example:8443/v1" }\n'), {}, async (url) => {
      seen.push(url)
      return answers[url] ?? 'PROXY proxy.corp:3128; DIRECT'
    })
    expect(net).toEqual({ proxy: 'http://proxy.corp:3128', direct: ['gw.corp.example:8443'], unlike: ['https://api.anthropic.com'] })
    expect(seen.length).toBeGreaterThan(10)
  })

  it('stays out of the way: a proxy in the config or the environment wins, a system without one, an error or no answer in time gives nothing', async () => {
    const proxied = async () => 'PROXY proxy.corp:3128'
    expect(await systemNetwork(config('upstream: { proxy: "http://mine:3128" }\n'), {}, proxied)).toBeNull()
    expect(await systemNetwork(config(), { https_proxy: 'http://env:3128' }, proxied)).toBeNull()
    expect(await systemNetwork(config(), {}, async () => 'DIRECT')).toBeNull()
    expect(await systemNetwork(config(), {}, async () => Promise.reject(new Error('net::ERR_FAILED')))).toBeNull()
    expect(
      await systemNetwork(config(), {}, () => {
        throw new TypeError("Cannot read properties of undefined (reading 'resolveProxy')")
      }),
    ).toBeNull()
    expect(await systemNetwork(config(), {}, () => new Promise<string>(() => {}), 50)).toBeNull()
  })

  it('sends directly only the port the system reaches directly, not every port of that host', async () => {
    const answers: Record<string, string> = { 'https://corp.example': 'DIRECT' }
    const net = await systemNetwork(config('team: { url: "https://corp.example", token: "t" }\notel: { endpoint: "https://corp.example:4318" }\n'), {}, async (url) => answers[url] ?? 'PROXY proxy.corp:3128')
    const rule = proxyRule({ proxy: net!.proxy, no_proxy: net!.direct }, {})!
    expect({ team: rule('https://corp.example'), otel: rule('https://corp.example:4318') }).toEqual({ team: null, otel: 'http://proxy.corp:3128' })
  })
})
