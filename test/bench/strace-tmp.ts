import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs'
import { spawn } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { startChild } from './proxy-kit/child'
import { runLoad } from './proxy-kit/load'
import { SCENARIOS } from './proxy-kit/scenarios'
const HERE = new URL('.', import.meta.url).pathname
const ROOT = join(HERE, '../..')
const KIT = join(HERE, 'proxy-kit')
const which = process.env.SC ?? 'nonstream'
async function measure(name: string, c: Awaited<ReturnType<typeof startChild>>) {
  const sc = SCENARIOS.find((s) => s.key === which)!
  await runLoad(c.url, sc.call, 32, 4000)
  const out = join(tmpdir(), `strace-${name}.txt`)
  const st = spawn('strace', ['-c', '-f', '-o', out, '-p', String(c.proc.pid)], { stdio: 'ignore' })
  await new Promise((r) => setTimeout(r, 500))
  const r = await runLoad(c.url, sc.call, 8, 3000)
  st.kill('SIGINT'); await new Promise((r) => st.once('exit', r))
  console.log(`== ${name} ok=${r.ok}`)
  const lines = readFileSync(out, 'utf8').split('\n')
  for (const l of lines) { const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)/.exec(l); if (m && Number(m[1]) / r.ok > 0.05) console.log(m[2].padEnd(20), (Number(m[1]) / r.ok).toFixed(2), '/call') }
}
async function main() {
  const upstream = await startChild('up', ['--import', 'tsx', join(KIT, 'upstream.ts')])
  const dataDir = mkdtempSync(join(tmpdir(), 'burnrate-st-'))
  const configFile = join(dataDir, 'config.yaml')
  writeFileSync(configFile, stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: 'UTC',
    providers: { openai: { base_url: `${upstream.url}/v1` }, anthropic: { base_url: upstream.url } },
    budgets: { rules: [{ api_key_pattern: 'sk-*', daily_limit_usd: 1_000_000, action: 'block' }] } }))
  const b = await startChild('b', [join(ROOT, 'out/main/cli.js'), '--config', configFile, '--data-dir', dataDir])
  const bare = await startChild('bare', ['--import', 'tsx', join(KIT, 'bare-proxy.ts')], { TARGET: upstream.url })
  await measure('bare', bare)
  await measure('burnrate', b)
  await b.stop(); await bare.stop(); await upstream.stop()
}
main().catch((e) => { console.error(e); process.exit(1) })
