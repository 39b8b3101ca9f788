import { createHash } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { WebSocketServer } from 'ws'
import { bedrockInvokeStream } from '../support/event-stream'
import { anthropicStream } from '../support/fixtures'

/**
 * A loopback stand-in for the three providers the agent CLIs speak, answering every model call
 * with a short text and usage numbers of its own (different for every call), so the suite can
 * compare each recorded call with what the upstream said:
 * Anthropic Messages (JSON and SSE), OpenAI Responses (SSE, and over a WebSocket on
 * GET /v1/responses), OpenAI Chat Completions (JSON and SSE), Gemini generateContent / streamGenerateContent?alt=sse, and the ChatGPT
 * backend Codex uses when logged in with ChatGPT (/backend-api/codex/responses over SSE or a
 * WebSocket, answered with the plan's x-codex-primary-* / x-codex-secondary-* headers, plus the
 * account check /backend-api/wham/accounts/check and /backend-api/codex/models it needs first).
 */

/** The plan windows the mock's ChatGPT backend reports (x-codex-* headers, as Codex reads them). */
export const CODEX_PLAN = { primary: { usedPercent: 12.5, windowMinutes: 300 }, secondary: { usedPercent: 40, windowMinutes: 10080 } }

function codexPlanHeaders(): Record<string, string> {
  const now = Math.floor(Date.now() / 1000)
  return {
    'x-codex-primary-used-percent': String(CODEX_PLAN.primary.usedPercent),
    'x-codex-primary-window-minutes': String(CODEX_PLAN.primary.windowMinutes),
    'x-codex-primary-reset-at': String(now + 3600),
    'x-codex-secondary-used-percent': String(CODEX_PLAN.secondary.usedPercent),
    'x-codex-secondary-window-minutes': String(CODEX_PLAN.secondary.windowMinutes),
    'x-codex-secondary-reset-at': String(now + 3 * 86400),
  }
}

/** The Claude plan's windows the mock reports to a Claude account's OAuth token (anthropic-ratelimit-unified-*). */
export const CLAUDE_PLAN = { '5h': 0.31, '7d': 0.12 }

function claudePlanHeaders(): Record<string, string> {
  const now = Math.floor(Date.now() / 1000)
  return {
    'anthropic-ratelimit-unified-status': 'allowed',
    'anthropic-ratelimit-unified-representative-claim': 'five_hour',
    'anthropic-ratelimit-unified-5h-utilization': String(CLAUDE_PLAN['5h']),
    'anthropic-ratelimit-unified-5h-reset': String(now + 3 * 3600),
    'anthropic-ratelimit-unified-5h-status': 'allowed',
    'anthropic-ratelimit-unified-7d-utilization': String(CLAUDE_PLAN['7d']),
    'anthropic-ratelimit-unified-7d-reset': String(now + 5 * 86400),
    'anthropic-ratelimit-unified-7d-status': 'allowed',
  }
}

/** Claude on Vertex AI: `…/publishers/anthropic/models/{model}:rawPredict` or `:streamRawPredict`. */
const VERTEX_CLAUDE = /\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/

/** Claude on Amazon Bedrock: `/model/{id}/invoke` or `/invoke-with-response-stream`. */
const BEDROCK_INVOKE = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream)$/

/** The Google access token the mock's metadata server gives. */
export const VERTEX_TOKEN = 'ya29.burnrate-suite-vertex-access-token-0008'

const RESPONSES_PATH = /(\/v1|\/backend-api\/codex)\/responses$/

export interface Usage {
  input: number
  output: number
  cacheRead: number
}

export interface Exchange {
  protocol: 'anthropic' | 'responses-sse' | 'responses-ws' | 'chat' | 'gemini' | 'other'
  method: string
  url: string
  headers: http.IncomingHttpHeaders
  /** SHA-256 of the request body as received (for a WebSocket: of the response.create frame). */
  requestSha: string
  /** SHA-256 of the response body as sent (for a WebSocket: of the frames, concatenated). */
  responseSha: string
  model: string
  usage: Usage | null
  /** The text the answer carries. */
  text: string
}

/** The quota buckets the mock's Gemini Code Assist reports (retrieveUserQuota). */
export const CODE_ASSIST_QUOTA = [
  { modelId: 'gemini-2.5-pro', tokenType: 'REQUESTS', remainingFraction: 0.6, remainingAmount: '60', resetTime: new Date(Date.now() + 8 * 3600_000).toISOString() },
  { modelId: 'gemini-2.5-flash', tokenType: 'REQUESTS', remainingFraction: 0.95, remainingAmount: '950', resetTime: new Date(Date.now() + 8 * 3600_000).toISOString() },
]

export interface AgentMock {
  url: string
  exchanges: Exchange[]
  close(): Promise<void>
}

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex')

export async function startAgentMock(): Promise<AgentMock> {
  const exchanges: Exchange[] = []
  let n = 0
  const next = (): { usage: Usage; text: string } => {
    n++
    return { usage: { input: 1000 + 7 * n, output: 20 + n, cacheRead: 100 + n }, text: `Burnrate mock answer ${n}.` }
  }

  const server = http.createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (c: Buffer) => parts.push(c))
    req.on('end', () => {
      const body = Buffer.concat(parts)
      let json: any
      try {
        json = body.length ? JSON.parse(body.toString('utf8')) : undefined
      } catch {
        json = undefined
      }
      const url = req.url ?? '/'
      const send = (protocol: Exchange['protocol'], status: number, headers: Record<string, string>, out: string | Buffer, model: string, usage: Usage | null, text: string) => {
        exchanges.push({ protocol, method: req.method ?? '', url, headers: req.headers, requestSha: sha(body), responseSha: sha(out), model, usage, text })
        res.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(out)) })
        res.end(out)
      }
      /** A Messages API answer from `model`, as SSE or JSON, with `headers` beside its content type. */
      const sendAnthropic = (model: string, stream: boolean, headers: Record<string, string> = {}) => {
        const { usage, text } = next()
        if (stream) send('anthropic', 200, { 'content-type': 'text/event-stream', ...headers }, anthropicSse(model, usage, text), model, usage, text)
        else send('anthropic', 200, { 'content-type': 'application/json', ...headers }, JSON.stringify(anthropicJson(model, usage, text)), model, usage, text)
      }
      const path = url.split('?')[0]
      const vertexClaude = VERTEX_CLAUDE.exec(path)
      if (req.method === 'GET' && path.startsWith('/computeMetadata/v1/')) {
        // Google's metadata server (GCE_METADATA_HOST), where Application Default Credentials get
        // the Google access token Vertex AI calls carry. The agent asks it directly, not through
        // Burnrate: not an exchange.
        const token = path.endsWith('/service-accounts/default/token')
        const out = token ? JSON.stringify({ access_token: VERTEX_TOKEN, expires_in: 3599, token_type: 'Bearer' }) : path.endsWith('/project/project-id') ? 'burnrate-suite-project' : 'ok'
        res.writeHead(200, { 'metadata-flavor': 'Google', 'content-type': token ? 'application/json' : 'text/plain', 'content-length': String(Buffer.byteLength(out)) })
        res.end(out)
        return
      }
      const bedrockInvoke = BEDROCK_INVOKE.exec(path)
      if (req.method === 'POST' && bedrockInvoke) {
        // Claude on Amazon Bedrock: the model id in the path, Anthropic's answer; the stream in
        // AWS's event stream encoding, each event base64 in a `chunk` message.
        const model = decodeURIComponent(bedrockInvoke[1])
        if (bedrockInvoke[2] === 'invoke-with-response-stream') {
          const { usage, text } = next()
          send('anthropic', 200, { 'content-type': 'application/vnd.amazon.eventstream' }, Buffer.concat(bedrockInvokeStream(Buffer.from(anthropicSse(model, usage, text)))), model, usage, text)
        } else sendAnthropic(model, false)
        return
      }
      if (req.method === 'GET' && path === '/inference-profiles') {
        // Bedrock's control plane: Claude Code lists the inference profiles it may call.
        send('other', 200, { 'content-type': 'application/json' }, JSON.stringify({ inferenceProfileSummaries: [] }), '', null, '')
        return
      }
      if (req.method === 'POST' && vertexClaude?.[1] === 'count-tokens') {
        send('other', 200, { 'content-type': 'application/json' }, '{"input_tokens":10}', '', null, '')
      } else if (req.method === 'POST' && vertexClaude) {
        // Claude on Vertex AI: the model in the path, Anthropic's answer.
        sendAnthropic(decodeURIComponent(vertexClaude[1]), vertexClaude[2] === 'streamRawPredict' || !!json?.stream)
      } else if (req.method === 'POST' && /\/v1\/messages$/.test(path)) {
        // A Claude account's OAuth token (Claude Code logged in) gets the plan's meter, as Anthropic sends it.
        const plan = String(req.headers.authorization ?? '').startsWith('Bearer sk-ant-oat') ? claudePlanHeaders() : {}
        sendAnthropic(String(json?.model ?? 'claude'), !!json?.stream, plan)
      } else if (req.method === 'POST' && /\/v1\/messages\/count_tokens$/.test(path)) {
        send('other', 200, { 'content-type': 'application/json' }, '{"input_tokens":10}', '', null, '')
      } else if (req.method === 'GET' && path.endsWith('/backend-api/wham/accounts/check')) {
        // Codex 0.169 (ChatGPT login) discovers its workspace's routing before every model call;
        // NO_CONSTRAINT keeps the configured base URL.
        const id = String(req.headers['chatgpt-account-id'] ?? '')
        send('other', 200, { 'content-type': 'application/json' }, JSON.stringify({ accounts: [{ id, workspace_backend_origin: 'NO_CONSTRAINT', account_routing_override: 'NO_CONSTRAINT' }] }), '', null, '')
      } else if (req.method === 'GET' && path.endsWith('/backend-api/codex/models')) {
        send('other', 200, { 'content-type': 'application/json' }, '{"models":[]}', '', null, '')
      } else if (req.method === 'POST' && RESPONSES_PATH.test(path)) {
        const { usage, text } = next()
        const model = String(json?.model ?? 'gpt')
        const plan = path.startsWith('/backend-api/') ? codexPlanHeaders() : {}
        send('responses-sse', 200, { 'content-type': 'text/event-stream', ...plan }, responsesEvents(model, usage, text).map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join(''), model, usage, text)
      } else if (req.method === 'POST' && /\/v1\/chat\/completions$/.test(path)) {
        // OpenAI Chat Completions (Qwen Code's and Cline's OpenAI-compatible providers): SSE, with
        // usage in a last chunk of its own when stream_options.include_usage asks for it, else JSON.
        const { usage, text } = next()
        const model = String(json?.model ?? 'gpt')
        if (json?.stream) {
          const chunks = chatChunks(model, usage, text, json?.stream_options?.include_usage === true)
          send('chat', 200, { 'content-type': 'text/event-stream' }, `${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`, model, usage, text)
        } else send('chat', 200, { 'content-type': 'application/json' }, JSON.stringify(chatJson(model, usage, text)), model, usage, text)
      } else if (req.method === 'GET' && /\/v1\/models$/.test(path)) {
        send('other', 200, { 'content-type': 'application/json' }, JSON.stringify({ object: 'list', data: [] }), '', null, '')
      } else if (req.method === 'POST' && path.startsWith('/v1internal:')) {
        // Gemini Code Assist (Gemini CLI logged in with Google): Gemini's answers, each wrapped
        // as {response, traceId} (gemini-cli code_assist/converter.ts); its other methods: a
        // free tier already onboarded, and {} for quotas, experiments and the rest.
        const method = path.slice('/v1internal:'.length)
        if (method === 'streamGenerateContent' || method === 'generateContent') {
          const { usage, text } = next()
          const model = String(json?.model ?? 'gemini')
          const chunks = geminiChunks(model, usage, text).map((c) => ({ response: c, traceId: `trace_${usage.input}` }))
          if (method === 'streamGenerateContent') {
            send('gemini', 200, { 'content-type': 'text/event-stream' }, chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`).join(''), model, usage, text)
          } else {
            send('gemini', 200, { 'content-type': 'application/json' }, JSON.stringify(chunks[chunks.length - 1]), model, usage, text)
          }
        } else if (method === 'loadCodeAssist') {
          const tier = { id: 'free-tier', name: 'Gemini Code Assist for individuals', hasOnboardedPreviously: true }
          send('other', 200, { 'content-type': 'application/json' }, JSON.stringify({ currentTier: tier, allowedTiers: [{ ...tier, isDefault: true }], cloudaicompanionProject: 'burnrate-suite-project' }), '', null, '')
        } else if (method === 'retrieveUserQuota') {
          send('other', 200, { 'content-type': 'application/json' }, JSON.stringify({ buckets: CODE_ASSIST_QUOTA }), '', null, '')
        } else {
          send('other', 200, { 'content-type': 'application/json' }, '{}', '', null, '')
        }
      } else if (req.method === 'POST' && /:(stream)?generateContent$/i.test(path)) {
        const { usage, text } = next()
        const model = decodeURIComponent(path.split('/models/')[1]?.split(':')[0] ?? 'gemini')
        const chunks = geminiChunks(model, usage, text)
        if (/:streamGenerateContent$/i.test(path)) {
          send('gemini', 200, { 'content-type': 'text/event-stream' }, chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`).join(''), model, usage, text)
        } else {
          send('gemini', 200, { 'content-type': 'application/json' }, JSON.stringify(chunks[chunks.length - 1]), model, usage, text)
        }
      } else if (req.method === 'POST' && /:countTokens$/i.test(path)) {
        send('other', 200, { 'content-type': 'application/json' }, '{"totalTokens":10}', '', null, '')
      } else {
        send('other', 404, { 'content-type': 'application/json' }, JSON.stringify({ error: { message: `mock: no ${req.method} ${path}` } }), '', null, '')
      }
    })
  })

  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: true })
  wss.on('headers', (headers, req) => {
    if ((req.url ?? '').startsWith('/backend-api/')) for (const [k, v] of Object.entries(codexPlanHeaders())) headers.push(`${k}: ${v}`)
  })
  server.on('upgrade', (req, socket, head) => {
    if (!RESPONSES_PATH.test((req.url ?? '').split('?')[0])) {
      socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n')
      return
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data, binary) => {
        if (binary) return
        const frame = Buffer.from(data as Buffer)
        let json: any
        try {
          json = JSON.parse(frame.toString('utf8'))
        } catch {
          return
        }
        if (json?.type !== 'response.create') return
        const { usage, text } = next()
        const model = String(json.model ?? 'gpt')
        const frames = responsesEvents(model, usage, text).map((e) => JSON.stringify(e))
        exchanges.push({ protocol: 'responses-ws', method: 'WS', url: req.url ?? '', headers: req.headers, requestSha: sha(frame), responseSha: sha(frames.join('')), model, usage, text })
        for (const f of frames) ws.send(f)
      })
    })
  })

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exchanges,
    async close() {
      for (const c of wss.clients) c.terminate()
      wss.close()
      server.closeAllConnections()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}

/** A new message id per answer, as Anthropic gives (Claude Code's logs are matched to the proxy's calls by it). */
let messages = 0
const messageId = () => `msg_mock_${++messages}_${Date.now().toString(36)}`

function anthropicJson(model: string, u: Usage, text: string) {
  return {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: u.input - u.cacheRead, cache_read_input_tokens: u.cacheRead, cache_creation_input_tokens: 0, output_tokens: u.output },
  }
}

function anthropicSse(model: string, u: Usage, text: string): string {
  return anthropicStream({ id: messageId(), model, usage: { input_tokens: u.input - u.cacheRead, cache_read_input_tokens: u.cacheRead, cache_creation_input_tokens: 0, output_tokens: 1 } }, u.output, text)
}

function responsesEvents(model: string, u: Usage, text: string): any[] {
  const id = `resp_mock_${u.input}`
  const item = { id: `msg_mock_${u.input}`, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] }
  const base = { id, object: 'response', created_at: 1_700_000_000, model, output: [] as unknown[], status: 'in_progress' }
  const usage = { input_tokens: u.input, input_tokens_details: { cached_tokens: u.cacheRead }, output_tokens: u.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: u.input + u.output }
  return [
    { type: 'response.created', sequence_number: 0, response: base },
    { type: 'response.in_progress', sequence_number: 1, response: base },
    { type: 'response.output_item.added', sequence_number: 2, output_index: 0, item: { ...item, status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', sequence_number: 3, item_id: item.id, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } },
    { type: 'response.output_text.delta', sequence_number: 4, item_id: item.id, output_index: 0, content_index: 0, delta: text },
    { type: 'response.output_text.done', sequence_number: 5, item_id: item.id, output_index: 0, content_index: 0, text },
    { type: 'response.content_part.done', sequence_number: 6, item_id: item.id, output_index: 0, content_index: 0, part: item.content[0] },
    { type: 'response.output_item.done', sequence_number: 7, output_index: 0, item },
    { type: 'response.completed', sequence_number: 8, response: { ...base, status: 'completed', output: [item], usage } },
  ]
}

function chatUsage(u: Usage) {
  return { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output, prompt_tokens_details: { cached_tokens: u.cacheRead } }
}

function chatJson(model: string, u: Usage, text: string) {
  return {
    id: `chatcmpl-mock-${u.input}`,
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: chatUsage(u),
  }
}

/** A streamed Chat Completion: the text, a finish, and (when asked for) usage in a last chunk with no choices. */
function chatChunks(model: string, u: Usage, text: string, includeUsage: boolean): any[] {
  const base = { id: `chatcmpl-mock-${u.input}`, object: 'chat.completion.chunk', created: 1_700_000_000, model }
  const chunks: any[] = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: text }, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
  ]
  if (includeUsage) chunks.push({ ...base, choices: [], usage: chatUsage(u) })
  return chunks
}

function geminiChunks(model: string, u: Usage, text: string): any[] {
  const usageMetadata = { promptTokenCount: u.input, cachedContentTokenCount: u.cacheRead, candidatesTokenCount: u.output, totalTokenCount: u.input + u.output }
  return [
    { candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0 }], modelVersion: model, responseId: `gem_${u.input}` },
    { candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }], usageMetadata, modelVersion: model, responseId: `gem_${u.input}` },
  ]
}
