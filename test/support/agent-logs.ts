import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'

/** An ISO 8601 time in UTC, as every agent writes them in its logs (`2026-11-20T10:15:00.120Z`). */
const ISO = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z/g

/**
 * Copies a folder of sample agent logs (test/fixtures/agent-logs) to `dest` with every time in
 * them moved by the same amount, so that the latest is `latest`: for a test whose answer depends
 * on today (a budget's month, the dashboard's last 30 days), which the recorded dates would
 * leave behind as the calendar moves on. Their order and the gaps between them are kept.
 */
export function copyLogsEndingAt(src: string, dest: string, latest: number): void {
  const files = readdirSync(src, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const path = join(e.parentPath, e.name)
      return { rel: relative(src, path), text: readFileSync(path, 'utf8') }
    })
  let max = -Infinity
  for (const f of files) for (const m of f.text.matchAll(ISO)) max = Math.max(max, Date.parse(m[0]))
  const shift = Number.isFinite(max) ? latest - max : 0
  for (const f of files) {
    mkdirSync(dirname(join(dest, f.rel)), { recursive: true })
    writeFileSync(join(dest, f.rel), f.text.replace(ISO, (t) => new Date(Date.parse(t) + shift).toISOString()))
  }
}

/**
 * One Claude Code call in a session log of its own under `root/<id>`, logged 11 minutes ago
 * (older than the settle time a running server imposes on imports): 100,000 tokens in, 10,000
 * out. Returns the folder to import.
 */
export function writeClaudeCodeCall(root: string, id: string, model: string): string {
  const dir = join(root, id)
  mkdirSync(join(dir, '-home-dev-shop'), { recursive: true })
  writeFileSync(
    join(dir, '-home-dev-shop/session.jsonl'),
    JSON.stringify({
      type: 'assistant', sessionId: id, cwd: '/home/dev/shop', timestamp: new Date(Date.now() - 11 * 60_000).toISOString(),
      message: { id, model, usage: { input_tokens: 100_000, output_tokens: 10_000 } },
    }) + '\n',
  )
  return dir
}
