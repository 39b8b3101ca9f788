import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DB_FILE } from '../../src/main/config/paths'
import { listeningUrl } from '../support/child'
import { eventually } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'

/**
 * Bodies Burnrate does not read whole go upstream as they come: a 150 MB batch input file
 * uploaded to OpenAI's `/v1/files` (past the 100 MB a body read whole may be) arrives at the
 * upstream byte for byte while the server's resident memory does not grow by anything like its
 * size, and an Anthropic Message Batch of more than 100 MB is created and recorded as a small one
 * is. The server is the built one (out/), in a process of its own, its memory read there
 * (test/support/memory-probe.mjs: the OS's peak, so no moment between samples is missed).
 */
const ROOT = resolve(__dirname, '../..')
const CLI = join(ROOT, 'out/main/cli.js')
const PROBE = join(ROOT, 'test/support/memory-probe.mjs')
const MB = 1024 * 1024

interface Received {
  method: string
  path: string
  bytes: number
  sha256: string
  contentType: string
}

let dir: string
let child: ChildProcess
let url: string
/** What the server has printed (shown when a test fails). */
let output: () => string = () => ''
let upstream: http.Server
const received: Received[] = []

/** An upstream that reads every body chunk by chunk, keeping only its size and hash, and answers as the provider would. */
function startUpstream(): Promise<string> {
  upstream = http.createServer((req, res) => {
    const hash = createHash('sha256')
    let bytes = 0
    req.on('data', (c: Buffer) => {
      bytes += c.length
      hash.update(c)
    })
    req.on('end', () => {
      received.push({ method: req.method ?? '', path: req.url ?? '', bytes, sha256: hash.digest('hex'), contentType: String(req.headers['content-type'] ?? '') })
      const answer =
        req.url === '/v1/files'
          ? { id: `file-${received.length}`, object: 'file', bytes, purpose: 'batch', filename: 'input.jsonl', status: 'processed' }
          : { id: `msgbatch_${received.length}`, type: 'message_batch', processing_status: 'in_progress', results_url: null, ended_at: null }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(answer))
    })
  })
  return new Promise((ok) => upstream.listen(0, '127.0.0.1', () => ok(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`)))
}

beforeAll(async () => {
  if (!existsSync(CLI)) execFileSync('npx', ['electron-vite', 'build'], { cwd: ROOT, stdio: 'ignore' })
  dir = mkdtempSync(join(tmpdir(), 'burnrate-big-upload-'))
  const base = await startUpstream()
  const cfg = join(dir, 'config.yaml')
  writeFileSync(cfg, `server: {host: 127.0.0.1, port: 0}\npricing: {auto_update: false}\nproviders:\n  openai: {base_url: "${base}/v1"}\n  anthropic: {base_url: "${base}"}\n`)
  child = spawn(process.execPath, ['--import', PROBE, CLI, '--config', cfg, '--data-dir', join(dir, 'data')], {
    env: { ...process.env, BURNRATE_TEST_MEMORY: join(dir, 'memory.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const listening = listeningUrl(child)
  output = listening.output
  url = await listening.url
}, 120_000)

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  await new Promise((ok) => upstream?.close(ok))
  rmSync(dir, { recursive: true, force: true })
})

/** The server's resident memory at its most so far, in bytes, as read after now. */
function peakMemory(): Promise<number> {
  const now = Date.now()
  return eventually(() => {
    const m = JSON.parse(readFileSync(join(dir, 'memory.json'), 'utf8')) as { peak: number; at: number }
    return m.at > now ? m.peak : undefined
  }) as Promise<number>
}

/**
 * Sends a body of `parts` (each written once the connection has taken the one before: the client
 * never holds more than a part) with its Content-Length; the answer's status and JSON, and the
 * body's sha256 as sent.
 */
function send(path: string, headers: Record<string, string>, length: number, parts: Iterable<Buffer>): Promise<{ status: number; json: any; sha256: string }> {
  return new Promise((ok, fail) => {
    const hash = createHash('sha256')
    const req = http.request(`${url}${path}`, { method: 'POST', agent: false, headers: { ...headers, 'content-length': String(length) } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c) => (text += c))
      res.on('end', () => ok({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null, sha256: hash.digest('hex') }))
    })
    req.on('error', (e) => fail(new Error(`${path}: ${e.message}\n${output()}`)))
    const it = parts[Symbol.iterator]()
    const next = (): void => {
      for (;;) {
        const { value, done } = it.next()
        if (done) {
          req.end()
          return
        }
        hash.update(value)
        if (!req.write(value)) {
          req.once('drain', next)
          return
        }
      }
    }
    next()
  })
}

/** A multipart form uploading a batch input file of `size` bytes (its `purpose` first, as the Python SDK sends it). */
function fileUpload(size: number): { headers: Record<string, string>; length: number; parts: Iterable<Buffer> } {
  const boundary = 'burnrate-test-boundary-7c1f'
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="input.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  )
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  const block = randomBytes(MB)
  function* parts(): Iterable<Buffer> {
    yield head
    for (let at = 0; at < size; at += MB) {
      // Each megabyte its own (its index in its first bytes), made as it is sent.
      const part = Buffer.from(block.subarray(0, Math.min(MB, size - at)))
      part.writeUInt32BE(at / MB, 0)
      yield part
    }
    yield tail
  }
  return {
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, authorization: 'Bearer sk-big-upload-0000001', 'x-burnrate-agent': 'uploader' },
    length: head.length + size + tail.length,
    parts: parts(),
  }
}

/** An Anthropic Message Batch of `count` requests, each with a prompt of `promptBytes`. */
function batch(count: number, promptBytes: number): { length: number; parts: Iterable<Buffer> } {
  const prompt = 'a'.repeat(promptBytes)
  const request = (i: number) => Buffer.from(`${i ? ',' : ''}${JSON.stringify({ custom_id: `r${i}`, params: { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: prompt }] } })}`)
  let length = '{"requests":['.length + ']}'.length
  for (let i = 0; i < count; i++) length += request(i).length
  function* parts(): Iterable<Buffer> {
    yield Buffer.from('{"requests":[')
    for (let i = 0; i < count; i++) yield request(i)
    yield Buffer.from(']}')
  }
  return { length, parts: parts() }
}

const ANTHROPIC = { 'content-type': 'application/json', 'x-api-key': 'sk-ant-big-batch-0000001', 'anthropic-version': '2023-06-01', 'x-burnrate-agent': 'batcher', 'x-burnrate-session': 'batch-run' }

describe('a body Burnrate does not read whole', () => {
  it('a 150 MB batch input file goes to /v1/files byte for byte, the server holding nothing like its size', async () => {
    // A small upload first: what the first upload loads (undici, the ledger's thread) is in the baseline.
    const small = fileUpload(MB)
    expect((await send('/v1/files', small.headers, small.length, small.parts)).status).toBe(200)
    await eventually(() => ledgerRows(join(dir, 'data', DB_FILE), "endpoint = 'other'").length === 1)
    const before = await peakMemory()

    const size = 150 * MB
    const big = fileUpload(size)
    const res = await send('/v1/files', big.headers, big.length, big.parts)
    expect(res.status).toBe(200)
    expect(res.json.bytes).toBe(big.length)
    const got = received.at(-1)!
    expect(got).toMatchObject({ method: 'POST', path: '/v1/files', bytes: big.length, sha256: res.sha256 })
    expect(got.contentType).toBe(big.headers['content-type'])
    // Read whole, the body alone would have added 150 MB (and more while it was put together).
    // Streamed, what grows is the chunks passed on and not yet collected: V8 collects them once
    // some 64 MB of them have gathered, whatever the body's size (a 400 MB upload grew it by 68 MB).
    const grew = (await peakMemory()) - before
    expect(grew).toBeLessThan((size * 2) / 3)

    // Recorded as any upload: its key, agent and status, at $0.
    const rows = await eventually(() => {
      const r = ledgerRows(join(dir, 'data', DB_FILE), "endpoint = 'other'")
      return r.length === 2 ? r : undefined
    }) as any[]
    expect(rows[1]).toMatchObject({ provider: 'openai', status: 200, agent: 'uploader', cost_usd: 0, error: null })
    expect(rows[1].api_key_hash).toBe(rows[0].api_key_hash)
  }, 300_000)

  it('an Anthropic Message Batch of more than 100 MB is created, and recorded as a small one is', async () => {
    const small = batch(2, 100)
    const smallRes = await send('/anthropic/v1/messages/batches', ANTHROPIC, small.length, small.parts)
    expect(smallRes.status).toBe(200)

    const big = batch(110, MB)
    expect(big.length).toBeGreaterThan(110 * MB)
    const res = await send('/anthropic/v1/messages/batches', ANTHROPIC, big.length, big.parts)
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ type: 'message_batch', processing_status: 'in_progress' })
    expect(received.at(-1)).toMatchObject({ path: '/v1/messages/batches', bytes: big.length, sha256: res.sha256 })

    const rows = await eventually(() => {
      const r = ledgerRows(join(dir, 'data', DB_FILE), "endpoint = 'messages.batches.create'")
      return r.length === 2 ? r : undefined
    }) as any[]
    const same = ({ id: _id, ts: _ts, latency_ms: _latency, call_key: _key, response_id: _response, ...rest }: Record<string, unknown>) => rest
    expect(same(rows[1])).toEqual(same(rows[0]))
    expect(rows[1]).toMatchObject({ provider: 'anthropic', model: '', status: 200, agent: 'batcher', session: 'batch-run', cost_usd: 0, error: null })
  }, 300_000)
})
