import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A real PostgreSQL for tests: a new cluster in a temp folder (Debian's `postgresql` binaries),
 * listening on 127.0.0.1 on a free port, trust auth for the `burnrate` role. As root (CI), the
 * server runs as the `postgres` user, since PostgreSQL refuses to run as root.
 */
export interface TestPostgres {
  /** `postgres://burnrate@127.0.0.1:<port>/postgres`: the cluster's own database. */
  url: string
  port: number
  /** The server's log file (what it reports of its clients: a connection dropped inside a transaction, say). */
  log: string
  /** A new empty database in this cluster, and its URL (one per test file or case keeps them apart). */
  createDatabase(name?: string): string
  /** Stops the server (fast) and removes its folder. */
  stop(): void
  /** Stops the server and keeps its data: clients see refused connections until `startServer()`. */
  stopServer(): void
  /** Starts the stopped server again, on the same port with the same data. */
  startServer(): void
}

const CANDIDATES = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/14/bin']

/** The folder holding initdb and pg_ctl, or null when PostgreSQL is not installed. */
export function postgresBin(): string | null {
  if (process.env.BURNRATE_TEST_PG_BIN) return process.env.BURNRATE_TEST_PG_BIN
  return CANDIDATES.find((d) => existsSync(join(d, 'initdb'))) ?? null
}

/** A free port on 127.0.0.1 (closed again: free until someone else takes it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

let counter = 0

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBin()
  if (!bin) throw new Error('PostgreSQL is not installed: apt-get install postgresql (or set BURNRATE_TEST_PG_BIN)')
  const root = process.getuid?.() === 0
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-pg-'))
  const data = join(dir, 'data')
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    chownSync(dir, uid, gid)
    chmodSync(dir, 0o700)
  }
  const as = (cmd: string, args: string[]) =>
    root ? spawnSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { encoding: 'utf8' }) : spawnSync(join(bin, cmd), args, { encoding: 'utf8' })
  const check = (r: ReturnType<typeof spawnSync>, what: string) => {
    if (r.status !== 0) throw new Error(`${what} failed: ${String(r.stderr || r.stdout || r.error)}`)
  }
  check(as('initdb', ['-D', data, '-U', 'burnrate', '--auth=trust', '-E', 'UTF8', '--no-sync']), 'initdb')
  let port = 0
  const start = () =>
    as('pg_ctl', [
      '-D', data, '-l', join(dir, 'log'), '-w', '-t', '60',
      '-o', `-p ${port} -h 127.0.0.1 -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`,
      'start',
    ])
  for (let attempt = 0; ; attempt++) {
    port = await freePort()
    const r = start()
    if (r.status === 0) break
    if (attempt >= 3) check(r, 'pg_ctl start')
  }
  const url = `postgres://burnrate@127.0.0.1:${port}/postgres`
  return {
    url,
    port,
    log: join(dir, 'log'),
    createDatabase(name) {
      const db = name ?? `t${process.pid}_${Date.now().toString(36)}_${++counter}`
      check(spawnSync(join(bin, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'burnrate', db], { encoding: 'utf8' }), 'createdb')
      return `postgres://burnrate@127.0.0.1:${port}/${db}`
    },
    stop() {
      as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'])
      rmSync(dir, { recursive: true, force: true })
    },
    stopServer() {
      // fast: open connections are closed at once (clients see them end), the data is kept.
      check(as('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']), 'pg_ctl stop')
    },
    startServer() {
      // The port was ours a moment ago; a few tries cover a socket still closing.
      for (let attempt = 0; ; attempt++) {
        const r = start()
        if (r.status === 0) return
        if (attempt >= 5) check(r, 'pg_ctl start')
        spawnSync('sleep', ['0.5'])
      }
    },
  }
}
