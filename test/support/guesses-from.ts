/**
 * Run as a program (`node --import tsx`), in a network namespace of its own where it may send
 * from any address (test/security/throttle-prefix.test.ts sets one up): starts a Burnrate from
 * the sources listening on every interface (`::`, IPv4 too), sends the wrong dashboard tokens
 * its argument lists, in order, each from the address it names, and prints each answer's
 * status and error message as one JSON line.
 */
import http from 'node:http'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { loadConfig } from '../../src/main/config/load'
import { silentLogger } from '../../src/main/log'
import { createBurnrate } from '../../src/main/server/server'

export interface Guess {
  /** The address it is sent from. */
  from: string
  /** The address it is sent to (one of this namespace's). */
  to: string
}

export interface Answer {
  status: number
  message: string
}

function send(port: number, g: Guess, i: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      // (Host is a loopback name, which Burnrate answers to: the address is what is counted.)
      { host: g.to, port, localAddress: g.from, path: '/api/dashboard/summary', agent: false, headers: { host: `127.0.0.1:${port}`, authorization: `Bearer wrong-guess-${i}` } },
      (res) => {
        let text = ''
        res.on('data', (d) => (text += d))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, message: JSON.parse(text).error?.message ?? '' }))
      },
    )
    req.on('error', reject)
    req.end()
  })
}

async function main(): Promise<void> {
  const guesses = JSON.parse(process.argv[2]) as Guess[]
  const dir = mkdtempSync(join(tmpdir(), 'burnrate-guesses-'))
  try {
    const config = join(dir, 'config.yaml')
    writeFileSync(config, stringify({ server: { host: '::', port: 0 }, dashboard: { token: 'guesses-from-token-0123456789abc' }, pricing: { auto_update: false } }))
    const server = createBurnrate(loadConfig({ config, dataDir: dir }, {}), {
      idleCollection: false,
      log: silentLogger,
      agentHome: { home: join(dir, 'agents-home'), env: { PATH: '' }, platform: process.platform },
    })
    const port = Number(new URL(await server.listen()).port)
    const answers: Answer[] = []
    for (const [i, g] of guesses.entries()) answers.push(await send(port, g, i))
    await server.close(2000)
    process.stdout.write(`${JSON.stringify(answers)}\n`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`)
  process.exit(1)
})
