import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'

/** A server the bench runs in its own process, found by the URL it prints when listening. */
export interface Child {
  name: string
  url: string
  proc: ChildProcess
  /** The inspector's WebSocket URL when the child was started with `--inspect=127.0.0.1:0` (for heap sampling), else null. */
  inspectorUrl: string | null
  /** Peak resident memory (VmHWM) so far, in bytes; null where /proc is missing. */
  peakRss(): number | null
  /** CPU time (user + system) used so far, in µs; null where /proc is missing. */
  cpuMicros(): number | null
  /** The same per kind of thread (threadKind), summed over the threads alive now; null where /proc is missing. */
  threadCpuMicros(): Record<ThreadKind, number> | null
  /** SIGTERM, then waits for the exit code. */
  stop(): Promise<number | null>
}

const LISTENING = /listening on (http:\/\/[^\s)]+)/i
const INSPECTOR = /Debugger listening on (ws:\/\/\S+)/

/** Starts `node <args>` and resolves once it prints "listening on http://...". */
export function startChild(name: string, args: string[], env: Record<string, string> = {}, timeoutMs = 30_000): Promise<Child> {
  const proc = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  let ready = false
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  return new Promise<Child>((resolve, reject) => {
    const timer = setTimeout(() => fail(`did not start within ${timeoutMs} ms`), timeoutMs)
    function fail(why: string): void {
      clearTimeout(timer)
      proc.kill('SIGKILL')
      reject(new Error(`${name} ${why}; its output:\n${output.slice(-4000)}`))
    }
    const onData = (b: Buffer) => {
      output += b.toString()
      const m = LISTENING.exec(output)
      if (!m) return
      ready = true
      clearTimeout(timer)
      proc.stdout!.off('data', onData)
      proc.stderr!.off('data', onData)
      // Keep draining its output so a chatty child never blocks on a full pipe.
      proc.stdout!.resume()
      proc.stderr!.on('data', (d: Buffer) => {
        output = (output + d.toString()).slice(-8000)
      })
      resolve({
        name,
        url: m[1],
        proc,
        inspectorUrl: INSPECTOR.exec(output)?.[1] ?? null,
        peakRss: () => peakRss(proc.pid),
        cpuMicros: () => cpuMicros(proc.pid),
        threadCpuMicros: () => threadCpuMicros(proc.pid),
        async stop() {
          if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
          return exited
        },
      })
    }
    proc.stdout!.on('data', onData)
    proc.stderr!.on('data', onData)
    proc.once('exit', (code) => {
      if (!ready) fail(`exited with ${code} before listening`)
    })
    proc.once('error', (err) => {
      if (!ready) fail(`could not start: ${err.message}`)
    })
  })
}

function peakRss(pid: number | undefined): number | null {
  if (!pid) return null
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) * 1024 : null
  } catch {
    return null
  }
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ: 100 on Linux). */
const USER_HZ = 100

function cpuMicros(pid: number | undefined): number | null {
  if (!pid) return null
  try {
    // Fields after the `(comm)`: state is 3rd, utime the 14th and stime the 15th of the whole line.
    const rest = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return ((Number(rest[11]) + Number(rest[12])) * 1e6) / USER_HZ
  } catch {
    return null
  }
}

/** Where a Node process's CPU goes: its event loop, worker threads (Burnrate's ledger write thread), V8's helper threads (GC, compilers), the rest (libuv's pool, ...). */
export type ThreadKind = 'main' | 'worker' | 'v8' | 'other'

/** The kind of a thread by its name (/proc/<pid>/task/<tid>/comm, as Node and V8 name them). */
export function threadKind(comm: string, isMain: boolean): ThreadKind {
  if (isMain) return 'main'
  if (comm === 'WorkerThread') return 'worker'
  if (comm.startsWith('V8') || comm.startsWith('v8:')) return 'v8'
  return 'other'
}

/** The utime + stime of a /proc stat line, in µs. */
export function statMicros(line: string): number {
  const rest = line.slice(line.lastIndexOf(') ') + 2).split(' ')
  return ((Number(rest[11]) + Number(rest[12])) * 1e6) / USER_HZ
}

function threadCpuMicros(pid: number | undefined): Record<ThreadKind, number> | null {
  if (!pid) return null
  const out: Record<ThreadKind, number> = { main: 0, worker: 0, v8: 0, other: 0 }
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()
        out[threadKind(comm, Number(tid) === pid)] += statMicros(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'))
      } catch {
        // the thread ended between the listing and the read
      }
    }
    return out
  } catch {
    return null
  }
}
