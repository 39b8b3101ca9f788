import { execFile } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { eventually } from '../support/http'
import { type Agent, BIN } from './harness'

/**
 * Cline's CLI (3.0) starts a hub daemon of its own at a run's start (`cline --cline-hub-daemon
 * --cwd …`, spawned detached, so in a process group of its own that killing the run's group
 * misses) and leaves it running when the run ends; `cline hub stop` asks it to shut down (and
 * SIGTERMs the pid it recorded under ~/.cline/data/locks/hub/ if it does not answer).
 */

/** Our processes started with this HOME (each agent has a temp HOME of its own): the CLI's and whatever it left. */
export function processesOf(home: string): number[] {
  if (process.platform !== 'linux') return []
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    try {
      if (readFileSync(join('/proc', entry, 'environ'), 'latin1').split('\0').includes(`HOME=${home}`)) pids.push(Number(entry))
    } catch {
      // Gone, or another user's.
    }
  }
  return pids
}

/**
 * `cline hub stop` as the agent until nothing started with its HOME is left (the daemon writes
 * its record a moment after it starts: a stop before that finds none). Fails, after killing them,
 * naming what is left if that takes over a minute.
 */
export async function stopClineHub(agent: Agent): Promise<void> {
  const end = Date.now() + 60_000
  while (processesOf(agent.home).length > 0 && Date.now() < end) {
    await promisify(execFile)(join(BIN, 'cline'), ['hub', 'stop'], { cwd: agent.cwd, env: agent.env, timeout: 60_000 })
    await eventually(() => processesOf(agent.home).length === 0, 5_000).catch(() => undefined)
  }
  const left = processesOf(agent.home).map((pid) => `${pid}: ${commandLine(pid)}`)
  killLeftovers([agent.home])
  if (left.length > 0) throw new Error(`cline hub stop left running:\n${left.join('\n')}`)
}

function commandLine(pid: number): string {
  try {
    return readFileSync(join('/proc', String(pid), 'cmdline'), 'latin1').split('\0').join(' ').trim()
  } catch {
    return '(gone)'
  }
}

/** Whatever a failed test left: SIGKILL, by pid, every process started with one of these HOMEs. */
export function killLeftovers(homes: string[]): void {
  for (const home of homes) {
    for (const pid of processesOf(home)) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
  }
}
