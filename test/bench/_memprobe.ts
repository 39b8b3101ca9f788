import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { stringify } from 'yaml'
import { startChild } from './proxy-kit/child'
import { runLoad } from './proxy-kit/load'
import { SCENARIOS } from './proxy-kit/scenarios'
const HERE = dirname(fileURLToPath(import.meta.url))
const CLI = join(resolve(HERE, '../..'), 'out/main/cli.js')
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
function smaps(pid: number) {
  const text = readFileSync(`/proc/${pid}/smaps`, 'utf8')
  const by = new Map<string, number>()
  let name = ''
  for (const line of text.split('\n')) {
    const m = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (m) { name = m[1] || '[anon]'; if (name.includes('/')) name = name.split('/').pop()!; continue }
    const r = /^Rss:\s+(\d+)/.exec(line)
    if (r) by.set(name, (by.get(name) ?? 0) + Number(r[1]))
  }
  return [...by.entries()].filter(([, v]) => v > 1024).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}:${(v / 1024).toFixed(1)}`).join(' ')
}
const upstream = await startChild('mock upstream', ['--import', 'tsx', join(HERE, 'proxy-kit/upstream.ts')])
const dataDir = mkdtempSync(join(tmpdir(), 'burnrate-memprobe-'))
const config = join(dataDir, 'config.yaml')
writeFileSync(config, stringify({ server: { host: '127.0.0.1', port: 0 }, timezone: 'UTC', providers: { openai: { base_url: `${upstream.url}/v1` }, anthropic: { base_url: upstream.url } }, budgets: { rules: [{ api_key_pattern: 'sk-*', daily_limit_usd: 1_000_000, action: 'block' }] } }))
const child = spawn(process.execPath, ['--require', '/tmp/mem/memlog.cjs', CLI, '--config', config, '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] })
let out = ''
const url = await new Promise<string>((res) => { const on = (d: Buffer) => { out += d; const m = /listening on (http:\/\/[^\s)]+)/i.exec(out); if (m) res(m[1]) }; child.stdout!.on('data', on); child.stderr!.on('data', on) })
child.stderr!.on('data', (d) => { for (const l of String(d).split('\n')) if (l.startsWith('MEMLOG')) console.log('   ', l) })
const snap = async (label: string) => { child.kill('SIGUSR2'); await sleep(200); console.log(label, smaps(child.pid!)) }
await sleep(2000); await snap('rest')
const load = await runLoad(url, SCENARIOS.find((x) => x.key === 'nonstream')!.call, 32, 8000)
console.log('calls', load.ok)
await snap('end of load')
await sleep(10_000); await snap('10s')
await sleep(35_000); await snap('45s')
child.kill('SIGTERM'); await upstream.stop()
