/**
 * Draws Burnrate's icons from SVG with the Chromium that is installed (Debian's), so they
 * need no design tool: `npx tsx scripts/make-icons.ts`. Writes resources/icon.png (1024 px,
 * electron-builder derives the .icns/.ico/Linux sizes from it) and the tray icons in
 * resources/tray (16 px and @2x 32 px; a macOS template image for the normal state).
 */
import { mkdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const OUT = join(ROOT, 'resources')

// One flame on a 100 x 100 grid: the outer flame and the inner tongue.
const OUTER = 'M50 6 C59 23 78 33 78 58 C78 77 65 92 50 92 C35 92 22 77 22 58 C22 43 30 34 35 25 C37 36 41 41 46 44 C43 29 45 17 50 6 Z'
const INNER = 'M50 47 C56 56 64 61 64 73 C64 81 58 87 50 87 C42 87 36 81 36 73 C36 64 44 58 50 47 Z'

function appIcon(): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1024 1024">
  <defs>
    <linearGradient id="bg" x1="0" y1="0" x2="0" y2="1">
      <stop offset="0" stop-color="#262134"/><stop offset="1" stop-color="#0c0a12"/>
    </linearGradient>
    <linearGradient id="flame" x1="0" y1="0" x2="0" y2="1">
      <stop offset="0" stop-color="#ffc046"/><stop offset="0.55" stop-color="#ff6a2b"/><stop offset="1" stop-color="#e8305f"/>
    </linearGradient>
    <linearGradient id="core" x1="0" y1="0" x2="0" y2="1">
      <stop offset="0" stop-color="#fff3c4"/><stop offset="1" stop-color="#ffb347"/>
    </linearGradient>
  </defs>
  <rect x="80" y="80" width="864" height="864" rx="200" fill="url(#bg)"/>
  <rect x="80" y="80" width="864" height="864" rx="200" fill="none" stroke="#ffffff" stroke-opacity="0.08" stroke-width="4"/>
  <g transform="translate(212 190) scale(6)">
    <path d="${OUTER}" fill="url(#flame)"/>
    <path d="${INNER}" fill="url(#core)"/>
  </g>
  <rect x="262" y="800" width="500" height="26" rx="13" fill="#ffffff" fill-opacity="0.12"/>
  <rect x="262" y="800" width="330" height="26" rx="13" fill="#ff7a33"/>
</svg>`
}

type State = 'ok' | 'warning' | 'blocking'
const COLOURS: Record<State, [string, string]> = {
  ok: ['#ffb020', '#f0532a'],
  warning: ['#ffd03a', '#f59e0b'],
  blocking: ['#ff6b6b', '#dc2626'],
}

/** The tray glyph: the flame with its tongue cut out, plus a badge for warning and blocking. */
function trayIcon(state: State, template: boolean): string {
  const [top, bottom] = COLOURS[state]
  const fill = template ? '#000000' : 'url(#g)'
  const badge =
    state === 'warning'
      ? `<circle cx="76" cy="76" r="22" fill="#f59e0b" stroke="#ffffff" stroke-width="6"/><rect x="72" y="62" width="8" height="17" rx="3" fill="#1f1300"/><circle cx="76" cy="86" r="4.5" fill="#1f1300"/>`
      : state === 'blocking'
        ? `<circle cx="76" cy="76" r="22" fill="#dc2626" stroke="#ffffff" stroke-width="6"/><rect x="64" y="72" width="24" height="8" rx="3" fill="#ffffff"/>`
        : ''
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">
  <defs><linearGradient id="g" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${top}"/><stop offset="1" stop-color="${bottom}"/></linearGradient></defs>
  <path d="${OUTER} ${INNER}" fill="${fill}" fill-rule="evenodd"/>
  ${badge}
</svg>`
}

async function main(): Promise<void> {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  })
  const page = await browser.newPage({ deviceScaleFactor: 1 })
  const render = async (svg: string, size: number, file: string) => {
    await page.setViewportSize({ width: size, height: size })
    await page.setContent(
      `<!doctype html><html><body style="margin:0;background:transparent">${svg.replace('<svg ', `<svg width="${size}" height="${size}" `)}</body></html>`,
    )
    mkdirSync(dirname(file), { recursive: true })
    await page.screenshot({ path: file, omitBackground: true, clip: { x: 0, y: 0, width: size, height: size } })
    console.log(`wrote ${file.slice(ROOT.length + 1)} (${size}x${size})`)
  }
  await render(appIcon(), 1024, join(OUT, 'icon.png'))
  for (const [suffix, size] of [['', 16], ['@2x', 32]] as const) {
    await render(trayIcon('ok', true), size, join(OUT, 'tray', `trayTemplate${suffix}.png`))
    for (const state of ['ok', 'warning', 'blocking'] as const) {
      await render(trayIcon(state, false), size, join(OUT, 'tray', `tray-${state}${suffix}.png`))
    }
  }
  await browser.close()
}

await main()
