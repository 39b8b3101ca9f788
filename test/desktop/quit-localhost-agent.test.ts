import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { describe, expect, it, vi } from 'vitest'
import { stringify } from 'yaml'
import { runConnect } from '../../src/main/cli/commands/connect'
import { silentLogger } from '../../src/main/log'
import { eventually } from '../support/http'
import { appEachTest } from './app-each-test'
import { app, state } from './fake-electron'

vi.mock('electron', () => import('./fake-electron'))

const { runDesktop } = await import('../../src/main/desktop/app')

const t = appEachTest('burnrate-quit-localhost-')

const CODEX = '# mine\nmodel = "o3"\n'

/** A port nothing listens on just now (the app takes it next). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })
}

const sink = (): Writable => new Writable({ write: (_c, _e, done) => done() })

/**
 * With `server.host: localhost` (both loopbacks), the app serves http://127.0.0.1:<port> while
 * `burnrate connect` in a terminal, reading the same config, points the agent at
 * http://localhost:<port>: the same Burnrate. Quitting the app asked only about agents whose
 * record named the app's address letter for letter, so this one was never asked about, and the
 * app quit at once, leaving Codex pointing at a Burnrate that had stopped ("connection refused").
 */
describe('quitting while an agent points at this Burnrate under another loopback name', () => {
  it('asks about it, and "Disconnect and quit" puts its file back', async () => {
    const port = await freePort()
    const config = join(t.dir, 'config.yaml')
    writeFileSync(config, stringify({ server: { host: 'localhost', port }, timezone: 'UTC' }))
    const home = join(t.dir, 'home')
    const codex = join(home, '.codex', 'config.toml')
    mkdirSync(join(home, '.codex'), { recursive: true })
    writeFileSync(codex, CODEX)
    const d = await runDesktop({ argv: ['burnrate'], env: { XDG_CONFIG_HOME: join(t.dir, 'xdg') }, platform: 'linux', log: silentLogger, signals: false, home })
    if (!d) throw new Error(`desktop did not start: ${JSON.stringify(state.errorBoxes)}`)
    expect(d.url).toBe(`http://127.0.0.1:${port}`)

    // `burnrate connect codex` from a terminal, with the app's config and data folder (its
    // userData, which the command line's default data folder is outside the tests).
    await runConnect('codex', { config, dataDir: d.config.data_dir, home, platform: 'linux' }, { stdout: sink(), stderr: sink(), env: { PATH: '' } })
    expect(readFileSync(codex, 'utf8')).toContain(`openai_base_url = "http://localhost:${port}/v1"`)

    state.messageBoxes = []
    state.messageBoxResponse = 0 // Disconnect and quit
    app.quit()
    await eventually(() => state.exited, 10_000)
    expect(state.messageBoxes.map((m) => m.message)).toEqual(['Codex CLI points at Burnrate'])
    expect(readFileSync(codex, 'utf8')).toBe(CODEX)
  })
})
