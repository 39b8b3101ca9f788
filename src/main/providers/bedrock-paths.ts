import { isObject } from '../metering/usage'
import { servedPriority } from './bedrock-converse'
import { inspectOpenAI } from './openai-endpoints'
import type { CallShape, RequestInfo } from './types'
import { withoutTrailingSlashes } from './trailing-slashes'

/**
 * Where a Bedrock call goes and what it is, from its path alone: `/{region}/…` sends it to that
 * region's runtime API (`/model/…`, `/async-invoke`, `/guardrail`, and its OpenAI-compatible API
 * `/openai/v1/…`) or its control plane (everything else); `/model/{id}/{operation}` names the
 * operation (InvokeModel, Converse, their streams, CountTokens) and the model, or the inference
 * profile, that prices it; the service tier it asks for is its header's or its body's (Converse's
 * `serviceTier`, the OpenAI-compatible API's `service_tier`), and a call of Claude asks for fast
 * mode with the Messages API's `speed: "fast"` (InvokeModel's body, Converse's
 * `additionalModelRequestFields`).
 */

const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d{1,2}$/
/** The runtime API's paths; everything else is the control plane's. */
const RUNTIME = /^\/(?:model|async-invoke|guardrail|openai)(?:\/|$)/
/**
 * The runtime's OpenAI-compatible API (docs.aws.amazon.com/bedrock/latest/userguide/inference-chat-completions.html:
 * base URL `https://bedrock-runtime.{region}.amazonaws.com/openai/v1`, a Bedrock API key, the
 * body's `model` a Bedrock model id such as `openai.gpt-oss-20b-1:0`): the path below `/openai/v1`.
 */
const OPENAI_API = /^\/openai\/v1(\/.*)$/
const MODEL_CALL = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream|converse|converse-stream|count-tokens)$/

/** `/{region}/rest` -> where it goes; null when the first segment is no region. */
export function bedrockPlace(path: string): { path: string; baseUrl: string } | null {
  const slash = path.indexOf('/', 1)
  const region = slash === -1 ? path.slice(1) : path.slice(1, slash)
  if (!REGION.test(region)) return null
  const rest = slash === -1 ? '/' : path.slice(slash)
  return { path: rest, baseUrl: RUNTIME.test(rest) ? `https://bedrock-runtime.${region}.amazonaws.com` : `https://bedrock.${region}.amazonaws.com` }
}

/** A path's model id, decoded (an ARN is sent percent-encoded). */
function decodedId(id: string): string {
  try {
    return decodeURIComponent(id)
  } catch {
    return id // kept as sent
  }
}

/** An application inference profile's ARN (`…:application-inference-profile/<id>`): it names no model. */
const APPLICATION_PROFILE = /^arn:[^:]*:bedrock:[^:]*:[^:]*:application-inference-profile\/([^/]+)$/

/**
 * The model a path's id names: the id itself, the id a system inference profile's ARN ends in
 * (`…:inference-profile/us.anthropic.…`), or for an application inference profile the model
 * `profiles` maps it to (by ARN or by its id), else its id (`named: false`: the answer's name for
 * the model prices the call).
 */
function modelOf(id: string, profiles: Record<string, string>): { model: string; named: boolean } {
  const s = decodedId(id)
  const app = APPLICATION_PROFILE.exec(s)
  if (app) {
    const mapped = profiles[s] ?? profiles[app[1]]
    return mapped ? { model: mapped, named: true } : { model: app[1], named: false }
  }
  return { model: s.startsWith('arn:') ? s.slice(s.lastIndexOf('/') + 1) : s, named: true }
}

/** Whether a path is the runtime's OpenAI-compatible API (metered as OpenAI's answers are). */
export function isOpenAIApi(path: string): boolean {
  return OPENAI_API.test(path)
}

export function inspectBedrock(req: RequestInfo, profiles: Record<string, string> = {}): CallShape {
  const openai = OPENAI_API.exec(req.path)
  if (openai) {
    const shape = inspectOpenAI({ ...req, path: openai[1] })
    // The Priority tier asked by the runtime's header or the body's `service_tier` (budgets reserve it at the model's fast price).
    if (shape.billable && (asksForPriority(req) || (isObject(req.body) && servedPriority(req.body.service_tier)))) shape.fast = true
    return shape
  }
  const m = MODEL_CALL.exec(withoutTrailingSlashes(req.path))
  if (!m) return { endpoint: 'other', model: '', stream: false, billable: false }
  const op = m[2]
  const { model } = modelOf(m[1], profiles)
  if (op === 'count-tokens') return { endpoint: 'count_tokens', model, stream: false, billable: false }
  const shape: CallShape = {
    endpoint: op.startsWith('converse') ? 'converse' : 'invoke',
    model,
    stream: op.endsWith('-stream'),
    billable: req.method === 'POST',
  }
  // Asking for the Priority tier, or a Claude model asking for fast mode (the Messages API's
  // `speed: "fast"`, an InvokeModel body's or Converse's `additionalModelRequestFields`): budgets
  // reserve it at the model's fast price; it is recorded at the tier or speed its answer names.
  if (shape.billable) {
    const asked = askedSpeed(req, shape.endpoint)
    if (asked.fastMode || asked.priority) shape.fast = true
  }
  return shape
}

/**
 * What a model call asks for beyond the standard tier: Claude's fast mode (`asksForFastMode`), the
 * Priority tier (`asksForPriority`).
 */
export interface AskedSpeed {
  fastMode: boolean
  priority: boolean
}

/** What an InvokeModel (`endpoint` `invoke`) or Converse (`converse`) request asks for beyond the standard tier. */
export function askedSpeed(req: RequestInfo, endpoint: string): AskedSpeed {
  return { fastMode: asksForFastMode(req.body, endpoint), priority: asksForPriority(req) }
}

/**
 * Whether a request asks for Claude's fast mode, the Messages API's `speed: "fast"`: an InvokeModel
 * body is the model's own (Anthropic's Messages body), and Converse passes the model's own fields
 * it has none of its own for in `additionalModelRequestFields` ("Additional inference parameters
 * that the model supports, beyond the base set of inference parameters that Converse and
 * ConverseStream support in the inferenceConfig field", Bedrock's API reference for Converse), as
 * it passes Claude's `thinking` and `output_config`.
 */
function asksForFastMode(body: unknown, endpoint: string): boolean {
  if (!isObject(body)) return false
  if (endpoint === 'invoke') return body.speed === 'fast'
  return endpoint === 'converse' && isObject(body.additionalModelRequestFields) && body.additionalModelRequestFields.speed === 'fast'
}

/**
 * Whether a request asks for Bedrock's Priority tier: the `X-Amzn-Bedrock-Service-Tier` header
 * (InvokeModel's, what Claude Code sends for `ANTHROPIC_BEDROCK_SERVICE_TIER`) or Converse's
 * `serviceTier` (`{type: "priority"}`) in its body.
 */
function asksForPriority(req: RequestInfo): boolean {
  const header = req.headers['x-amzn-bedrock-service-tier']
  return servedPriority(Array.isArray(header) ? header[0] : header) || (isObject(req.body) && servedPriority(req.body.serviceTier))
}

/** Whether a call's path names its model (false for an application inference profile `profiles` does not map). */
export function pathNamesModel(path: string, profiles: Record<string, string>): boolean {
  const m = MODEL_CALL.exec(withoutTrailingSlashes(path))
  return !m || modelOf(m[1], profiles).named
}
