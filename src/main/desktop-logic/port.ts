import net from 'node:net'
import type { Health } from '../../shared/api'
import { otherUsersListener } from './listener-owner'

/** Who answers on the configured address. */
export type PortOwner =
  | { kind: 'free' }
  | { kind: 'burnrate'; url: string; version: string }
  | { kind: 'other'; detail: string; slow?: true }

/** The address to connect to for a listen address (a wildcard listen is reached on loopback). */
export function connectUrl(host: string, port: number): string {
  let h = host
  if (h === '0.0.0.0' || h === '') h = '127.0.0.1'
  else if (h === '::' || h === '[::]') h = '::1'
  if (h.includes(':') && !h.startsWith('[')) h = `[${h}]`
  return `http://${h}:${port}`
}

/** A server URL as clients should use it: a wildcard listen address is reached on loopback. */
export function reachableUrl(url: string): string {
  const u = new URL(url)
  return connectUrl(u.hostname.replace(/^\[|\]$/g, ''), Number(u.port))
}

/**
 * Whether a health answer is Burnrate's: `status` `ok` or `degraded`, a `version` and an
 * `uptime_s`, as every release has answered. Many services answer `/api/health` with a status
 * and a version of their own; attached to, such a program was handed the dashboard's token.
 */
function isBurnrateHealth(body: Partial<Health> | null): body is Health {
  return (
    body !== null &&
    typeof body === 'object' &&
    (body.status === 'ok' || body.status === 'degraded') &&
    typeof body.version === 'string' &&
    typeof body.uptime_s === 'number' &&
    Number.isFinite(body.uptime_s)
  )
}

/**
 * Asks whoever listens on host:port for `GET /api/health`. A Burnrate answers JSON with its
 * `status`, `version` and `uptime_s`; a refused connection means the port is free; anything
 * else (another program, no answer in time) is "other".
 */
export async function probePort(host: string, port: number, timeoutMs = 1500): Promise<PortOwner> {
  const url = connectUrl(host, port)
  let res: Response
  try {
    res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' })
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code
    if (code === 'ECONNREFUSED') return { kind: 'free' }
    if ((err as Error).name === 'TimeoutError') return { kind: 'other', detail: `it does not answer HTTP within ${timeoutMs} ms`, slow: true }
    return { kind: 'other', detail: `it does not speak HTTP (${code ?? (err as Error).message})` }
  }
  let body: Partial<Health> | null
  try {
    body = (await res.json()) as Partial<Health>
  } catch {
    body = null
  }
  if (isBurnrateHealth(body)) {
    // On a machine others log in to, anyone may listen on the port while this user's Burnrate is
    // stopped and answer as one: attached to, it would be handed the dashboard's tokens and shown
    // as this user's spend (its agents' keys go to it whatever the app does).
    const other = await otherUsersListener(new URL(url).hostname.replace(/^\[|\]$/g, ''), port)
    if (other !== null) return { kind: 'other', detail: `another user's program (uid ${other}) answers on it as Burnrate` }
    return { kind: 'burnrate', url, version: body.version }
  }
  const server = res.headers.get('server')
  return { kind: 'other', detail: `it answered HTTP ${res.status}${server ? ` (${server})` : ''}, not Burnrate's health check` }
}

/** How long a holder of the port that did not answer the first health check in time is given: a Burnrate busy (a load run, a long export, a machine starting up) answers late. */
const SLOW_ANSWER_MS = 10_000

/**
 * `probePort`, asked once more, patiently, when no answer came in time: a Burnrate too busy to
 * answer within 1.5 s is still the one to attach to (taken for another program, the app offered
 * another port, and the tray showed a second Burnrate's spend while the agents reached the first).
 * A program that accepts and never answers costs the wait before the question.
 */
export async function patientProbe(host: string, port: number, firstMs = 1500, slowMs = SLOW_ANSWER_MS): Promise<PortOwner> {
  const first = await probePort(host, port, firstMs)
  return first.kind === 'other' && first.slow ? probePort(host, port, slowMs) : first
}

/** Whether a TCP listen on host:port succeeds right now. */
export function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer()
    s.once('error', () => resolve(false))
    s.listen({ host, port, exclusive: true }, () => s.close(() => resolve(true)))
  })
}

/** The first port from `from` on (up to `tries` of them) that can be listened on; 0 lets the system pick. */
export async function findFreePort(host: string, from: number, tries = 50): Promise<number> {
  for (let p = from; p < from + tries && p <= 65535; p++) {
    if (await canListen(host, p)) return p
  }
  return 0
}

export type StartResult =
  | { kind: 'started'; url: string }
  | { kind: 'attached'; url: string; version: string }
  | { kind: 'cancelled'; reason: string }

/** Thrown by `listen` when the port is taken (EADDRINUSE); any other error is passed through. */
export class PortTakenError extends Error {
  override name = 'PortTakenError'
}

export interface StartOrAttachOptions {
  host: string
  port: number
  /** Starts this process's server on `port`; rejects with PortTakenError when the port is taken. */
  listen(port: number): Promise<string>
  /** Another program holds `taken`: ask the person whether to use `suggested` instead. */
  askOtherPort(taken: number, suggested: number, detail: string): Promise<boolean>
  probe?: (host: string, port: number) => Promise<PortOwner>
  findFreePort?: (host: string, from: number) => Promise<number>
}

/**
 * The desktop's start-up decision: if a Burnrate (the headless one) already serves the
 * configured address, attach to it; if the port is free, start our own server there; if
 * something else holds it, say what and offer the next free port.
 */
export async function startOrAttach(opts: StartOrAttachOptions): Promise<StartResult> {
  const probe = opts.probe ?? patientProbe
  const findFree = opts.findFreePort ?? findFreePort
  let owner: PortOwner = { kind: 'free' }
  if (opts.port !== 0) owner = await probe(opts.host, opts.port)
  if (owner.kind === 'burnrate') return { kind: 'attached', url: owner.url, version: owner.version }
  if (owner.kind === 'free') {
    try {
      return { kind: 'started', url: await opts.listen(opts.port) }
    } catch (err) {
      if (!(err instanceof PortTakenError)) throw err
      // Taken between the probe and the listen: look again.
      owner = await probe(opts.host, opts.port)
      if (owner.kind === 'burnrate') return { kind: 'attached', url: owner.url, version: owner.version }
      if (owner.kind === 'free') owner = { kind: 'other', detail: 'the system refused to let Burnrate listen on it' }
    }
  }
  const suggested = await findFree(opts.host, opts.port + 1)
  const detail = owner.kind === 'other' ? owner.detail : ''
  if (!(await opts.askOtherPort(opts.port, suggested, detail))) {
    return { kind: 'cancelled', reason: `port ${opts.port} is in use by another program: ${detail}` }
  }
  return { kind: 'started', url: await opts.listen(suggested) }
}
