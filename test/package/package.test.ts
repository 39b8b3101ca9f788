/**
 * The packaged app, as far as it can be proved without Electron's binary: electron-builder builds
 * the unpacked app (`--dir`) around a stand-in Electron folder (no download), then every import
 * of the main process, the CLI and the ledger's write thread must resolve from inside the package,
 * better-sqlite3 must load from outside the asar, the renderer's assets must be in it, and the
 * packaged main process must start under the mocked `electron` the desktop tests use.
 */
import { spawn } from 'node:child_process'
import { builtinModules } from 'node:module'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import asar from '@electron/asar'
import { headlessCommand } from '../../src/main/desktop-logic/agents'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const ROOT = resolve(__dirname, '../..')
let work: string
let appDir: string
let resources: string
let extracted: string

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Promise<{ code: number; out: string }> {
  return new Promise((done, fail) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (c) => (out += c))
    child.stderr.on('data', (c) => (out += c))
    child.on('error', fail)
    child.on('close', (code) => done({ code: code ?? -1, out }))
  })
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name))
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'out/main/index.js'))) throw new Error('out/main is not built: run `npx electron-vite build` (npm test does) first')
  work = mkdtempSync(join(tmpdir(), 'burnrate-package-'))
  // The stand-in Electron: electron-builder copies this folder and renames the executable.
  const standIn = join(work, 'electron-dist')
  mkdirSync(standIn)
  writeFileSync(join(standIn, 'electron'), '#!/bin/sh\necho "stand-in Electron"\n', { mode: 0o755 })
  const res = await run(
    process.execPath,
    [join(ROOT, 'node_modules/electron-builder/cli.js'), '--dir', '--linux', '--x64', '--publish', 'never', `-c.electronDist=${standIn}`, `-c.directories.output=${join(work, 'dist')}`],
    { ...process.env, CI: 'true', ELECTRON_SKIP_BINARY_DOWNLOAD: '1' },
  )
  if (res.code !== 0) throw new Error(`electron-builder failed (${res.code}):\n${res.out}`)
  appDir = join(work, 'dist', 'linux-unpacked')
  resources = join(appDir, 'resources')
  extracted = join(work, 'app')
  asar.extractAll(join(resources, 'app.asar'), extracted)
}, 240_000)

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true })
})

describe('the packaged app (electron-builder --dir)', () => {
  it('has the executable, the tray icons, the update feed and the app archive', () => {
    expect(statSync(join(appDir, 'burnrate')).isFile()).toBe(true)
    for (const f of ['tray/tray-ok.png', 'tray/tray-warning.png', 'tray/tray-blocking.png', 'icon.png']) expect(existsSync(join(resources, f)), f).toBe(true)
    const feed = readFileSync(join(resources, 'app-update.yml'), 'utf8')
    expect(feed).toMatch(/provider: github/)
    expect(feed).toMatch(/repo: burnrate/)
  })

  it('keeps better-sqlite3 outside the asar (native code cannot load from inside it), for this platform only', () => {
    const archive = join(resources, 'app.asar')
    const natives = asar.listPackage(archive, { isPack: false }).filter((f) => f.endsWith('.node'))
    expect(natives.length).toBeGreaterThan(0)
    for (const f of natives) {
      expect((asar.statFile(archive, f.slice(1)) as { unpacked?: boolean }).unpacked, f).toBe(true)
      expect(existsSync(join(resources, 'app.asar.unpacked', f)), f).toBe(true)
    }
    expect(natives.some((f) => /darwin|win32/.test(f))).toBe(false)
  })

  it('resolves every import of the main process, the CLI and the ledger write thread from inside the package', async () => {
    const main = join(extracted, 'out', 'main')
    const specs = new Set<string>()
    for (const file of filesUnder(main).filter((f) => f.endsWith('.js'))) {
      const text = readFileSync(file, 'utf8')
      for (const m of text.matchAll(/(?:from\s*|import\s*\(\s*|import\s+)["']([^"'./][^"']*)["']/g)) specs.add(m[1])
      // require('x'), as the bundler renames it (require$1, require3), and createRequire(...)('x').
      for (const m of text.matchAll(/(?:\brequire(?:\$?\d+)?|createRequire\(import\.meta\.url\))\(\s*["']([^"'./][^"']*)["']\s*\)/g)) specs.add(m[1])
    }
    const external = [...specs].filter((s) => /^(@[\w.-]+\/)?[\w.-]+(\/[\w./-]+)?$/.test(s) && !s.startsWith('node:') && !builtinModules.includes(s) && s !== 'electron').sort()
    // zod and yaml are bundled into the chunks (fewer files to load at start-up): not imported.
    expect(external).toEqual(expect.arrayContaining(['better-sqlite3', 'undici', 'express', 'ws', 'jsonc-parser', '@decimalturn/toml-patch', 'diff', 'electron-updater', 'koffi']))
    expect(external).not.toContain('yaml')
    // Resolved from a file beside the bundles, the way they resolve them; better-sqlite3 also opens a database.
    const checker = join(main, '__check_imports.mjs')
    writeFileSync(
      checker,
      `const out = {}
for (const s of ${JSON.stringify(external)}) { try { out[s] = import.meta.resolve(s) } catch (e) { out[s] = 'UNRESOLVED: ' + e.message } }
const { default: Database } = await import('better-sqlite3')
const db = new Database(':memory:'); out.__sqlite = db.prepare('select sqlite_version() v').get().v; db.close()
const { default: koffi } = await import('koffi')
out.__trim = koffi.load('libc.so.6').func('int malloc_trim(size_t pad)')(0)
console.log(JSON.stringify(out))`,
    )
    const res = await run(process.execPath, [checker], { ...process.env }, main)
    expect(res.code, res.out).toBe(0)
    const resolved = JSON.parse(res.out.trim().split('\n').pop()!) as Record<string, string>
    for (const s of external) {
      expect(resolved[s], s).toMatch(/^file:/)
      expect(resolved[s].startsWith(pathToFileURL(extracted).href), `${s} resolves inside the package: ${resolved[s]}`).toBe(true)
    }
    expect(resolved.__sqlite).toMatch(/^3\./)
    // koffi's binary (the idle collection's malloc_trim) loads from the package too.
    expect(typeof resolved.__trim).toBe('number')
  })

  it("has every asset the renderer's page loads", () => {
    const renderer = join(extracted, 'out', 'renderer')
    const html = readFileSync(join(renderer, 'index.html'), 'utf8')
    const refs = [...html.matchAll(/(?:src|href)="(\.?\/?assets\/[^"]+)"/g)].map((m) => m[1])
    expect(refs.length).toBeGreaterThan(0)
    for (const r of refs) expect(existsSync(join(renderer, r)), r).toBe(true)
  })

  it('the headless server the app leaves running on quit starts from inside the package', async () => {
    const dataDir = join(work, 'headless-data')
    const cmd = headlessCommand({ execPath: process.execPath, cliJs: join(extracted, 'out/main/cli.js'), dataDir, configFile: null, port: 0, env: process.env })
    const child = spawn(cmd.command, cmd.args, { env: { ...cmd.env, BURNRATE_CONFIG: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
    try {
      let log = ''
      const url = await new Promise<string>((done, fail) => {
        const onData = (c: Buffer) => {
          log += c
          const m = /listening on (http:\/\/[^\s]+)/.exec(log)
          if (m) done(m[1])
        }
        child.stdout.on('data', onData)
        child.stderr.on('data', onData)
        child.on('exit', (code) => fail(new Error(`exited ${code}: ${log}`)))
      })
      const health = await (await fetch(`${url}/api/health`)).json()
      expect(health.status).toBe('ok')
      expect(existsSync(join(dataDir, 'burnrate.db'))).toBe(true)
    } finally {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
    }
  }, 60_000)

  it('starts the packaged main process under the mocked electron: server, window, tray, then quits cleanly', async () => {
    const boot = join(work, 'boot.mjs')
    const userData = join(work, 'userData')
    mkdirSync(userData)
    writeFileSync(
      boot,
      `import { registerHooks } from 'node:module'
const fake = ${JSON.stringify(pathToFileURL(join(ROOT, 'test/desktop/fake-electron.ts')).href)}
registerHooks({ resolve: (s, c, next) => (s === 'electron' ? { url: fake, shortCircuit: true } : next(s, c)) })
const { resetElectron, state, app } = await import(fake)
resetElectron(${JSON.stringify(userData)})
await import(${JSON.stringify(pathToFileURL(join(extracted, 'out/main/index.js')).href)})
const until = async (f) => { for (let i = 0; i < 600 && !f(); i++) await new Promise((r) => setTimeout(r, 50)); if (!f()) throw new Error('timed out') }
await until(() => globalThis.burnrateDesktop)
const d = globalThis.burnrateDesktop
const health = await (await fetch(d.url + '/api/health')).json()
const page = await fetch(d.url + '/', { headers: { accept: 'text/html' } })
const html = await page.text()
const asset = html.match(/src="([^"]+\\.js)"/)?.[1]
const assetStatus = asset ? (await fetch(new URL(asset, d.url + '/'))).status : 0
const report = { health: health.status, page: page.status, assetStatus, windows: state.windows.length, loaded: state.windows[0]?.loadedUrls, trays: state.trays.length, errors: state.errorBoxes }
app.quit()
await until(() => state.exited)
console.log(JSON.stringify({ ...report, exited: state.exited, db: ${JSON.stringify(join(userData, 'burnrate.db'))} }))
process.exit(0)`,
    )
    const home = join(work, 'home')
    mkdirSync(home)
    const res = await run(process.execPath, ['--import', 'tsx', boot], {
      ...process.env,
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      BURNRATE_PORT: '0',
      BURNRATE_DATA_DIR: '',
      BURNRATE_CONFIG: '',
    })
    expect(res.code, res.out).toBe(0)
    const report = JSON.parse(res.out.trim().split('\n').pop()!)
    expect(report).toMatchObject({ health: 'ok', page: 200, assetStatus: 200, windows: 1, trays: 1, errors: [], exited: true })
    expect(existsSync(report.db)).toBe(true)
    expect(relative(work, report.db).startsWith('..')).toBe(false)
  }, 120_000)
})
