import { describe, expect, it } from 'vitest'
import { confirmText, headlessCommand, movedAgents, movedNotice, quitQuestion, shouldEnableLogin } from './agents'

describe('desktop agent logic', () => {
  it('the confirmation lists every file and setting that changes', () => {
    const t = confirmText(
      {
        id: 'x',
        agent: 'codex',
        action: 'connect',
        url: 'http://127.0.0.1:8787',
        noop: false,
        notes: [],
        changes: [{ file: '~/.codex/config.toml', create: false, remove: false, diff: '', settings: [{ key: 'openai_base_url', from: null, to: 'http://127.0.0.1:8787/v1' }] }],
      },
      'Codex CLI',
    )
    expect(t.message).toBe('Point Codex CLI at Burnrate (http://127.0.0.1:8787)?')
    expect(t.detail).toContain('~/.codex/config.toml:\n  openai_base_url: (not set) → http://127.0.0.1:8787/v1')
    expect(t.button).toBe('Connect')
  })

  it('turns start-at-login on once, when an agent is first connected', () => {
    expect(shouldEnableLogin({ connected: 1, loginEnabled: false, alreadyOffered: false })).toBe(true)
    expect(shouldEnableLogin({ connected: 1, loginEnabled: false, alreadyOffered: true })).toBe(false)
    expect(shouldEnableLogin({ connected: 0, loginEnabled: false, alreadyOffered: false })).toBe(false)
    expect(shouldEnableLogin({ connected: 2, loginEnabled: true, alreadyOffered: false })).toBe(false)
  })

  it('asks on quit in plain words, with a choice per button', () => {
    const q = quitQuestion(['Claude Code', 'Codex CLI'], 'http://127.0.0.1:8787')
    expect(q.message).toBe('2 agents point at Burnrate')
    expect(q.detail).toContain('connection refused')
    expect(q.buttons).toHaveLength(q.choices.length)
    expect(quitQuestion(['Claude Code'], 'http://127.0.0.1:8787').message).toBe('Claude Code points at Burnrate')
  })

  it('says which agents point at the old port', () => {
    expect(movedNotice(['Codex CLI'], ['http://127.0.0.1:8787'], 'http://127.0.0.1:8788').body).toBe(
      'Codex CLI points at http://127.0.0.1:8787, but Burnrate runs on http://127.0.0.1:8788 now. Click to re-point it here.',
    )
  })

  it('offers to move only the agents at this app\'s own address on another port, not those pointed at another Burnrate', () => {
    const connected = [
      { agent: 'claude-code', url: 'http://127.0.0.1:8787' },
      { agent: 'opencode', url: 'http://localhost:9000' },
      { agent: 'sdk', url: 'http://[::1]:8787' },
      { agent: 'codex', url: 'https://burnrate.example.com' },
      { agent: 'gemini-cli', url: 'http://10.0.0.5:8787' },
      { agent: 'a', url: 'https://127.0.0.1:8787' },
      { agent: 'b', url: 'http://127.0.0.1:8787/team' },
      { agent: 'c', url: 'http://127.0.0.1:8788' },
    ]
    expect(movedAgents(connected, 'http://127.0.0.1:8788').map((c) => c.agent)).toEqual(['claude-code', 'opencode', 'sdk'])
    expect(movedAgents([{ agent: 'codex', url: 'http://burnrate.internal:8787' }], 'http://127.0.0.1:8788')).toEqual([])
  })

  it('starts the headless server with the app executable as Node on the same data and port', () => {
    expect(headlessCommand({ execPath: '/opt/Burnrate/burnrate', cliJs: '/app/out/main/cli.js', dataDir: '/d', configFile: null, port: 8787, env: { A: '1' } })).toEqual({
      command: '/opt/Burnrate/burnrate',
      args: ['/app/out/main/cli.js', 'serve', '--data-dir', '/d', '--port', '8787'],
      env: { A: '1', ELECTRON_RUN_AS_NODE: '1' },
    })
  })

  it("gives the headless server the system's proxy the app's server used, keeping the environment's NO_PROXY", () => {
    const cmd = headlessCommand({
      execPath: '/opt/Burnrate/burnrate',
      cliJs: '/app/out/main/cli.js',
      dataDir: '/d',
      configFile: null,
      port: 8787,
      env: { NO_PROXY: 'intranet.example', https_proxy: 'not a proxy' },
      systemProxy: { proxy: 'http://proxy.corp:3128', direct: ['api.internal:443'] },
    })
    const proxy = 'http://proxy.corp:3128'
    const noProxy = 'intranet.example,api.internal:443'
    expect(cmd.env).toEqual({ HTTPS_PROXY: proxy, https_proxy: proxy, HTTP_PROXY: proxy, http_proxy: proxy, NO_PROXY: noProxy, no_proxy: noProxy, ELECTRON_RUN_AS_NODE: '1' })
  })
})
