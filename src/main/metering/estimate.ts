import { estimator } from './estimator'
import { imageOf, imageTokens, type PromptImage } from './image-tokens'
import { encodingFor, familyFactor, sampleOf, sampleOfJoined } from './token-count'
import { emptyUsage, isObject, type Usage } from './usage'

/**
 * Token estimates for responses that carry no usage (an OpenAI stream without
 * `stream_options.include_usage`, a stream cut short). The counts come from a real BPE tokenizer
 * (gpt-tokenizer) with the encoding of the model's family, and OpenAI's documented chat overhead
 * (3 tokens per message, 3 to prime the reply). Counting never runs on the event loop's time
 * unbounded: it happens on the estimate thread, or in short slices (./estimator.ts), in time
 * linear in the text (./token-count.ts).
 */

/** Starts loading the tokenizer a call may need, so its estimate does not wait for it. */
export function warmEstimate(model: string): void {
  estimator().warm(encodingFor(model))
}

/** How deep blocks in blocks are read (a tool result's content blocks are the second level). */
const MAX_BLOCK_DEPTH = 4
/** Images of a prompt whose size is read from their data; the rest are taken at a typical size (./image-tokens.ts). */
const MAX_SIZED_IMAGES = 64

/**
 * Every piece of text a request sends as its prompt, and how many messages hold it: messages'
 * text, tool calls and tool results (as their JSON text where they are objects), the system
 * prompt and the tools' definitions, in every provider's request format; and its images, which
 * are billed by their size in pixels, not as text (./image-tokens.ts).
 */
export function promptParts(body: unknown): { texts: string[]; messages: number; images: PromptImage[] } {
  const texts: string[] = []
  const images: PromptImage[] = []
  let messages = 0
  if (!isObject(body)) return { texts, messages, images }
  // Gemini Code Assist: Gemini's request, wrapped as `request` (beside `model` and `project`).
  if (isObject(body.request) && Array.isArray(body.request.contents) && body.contents === undefined) return promptParts(body.request)
  // A tool's input or result given as JSON (Anthropic's tool_use.input, Gemini's functionCall.args
  // and functionResponse.response, Converse's toolUse.input and json results): its JSON text.
  const pushValue = (v: unknown): void => {
    if (typeof v === 'string') texts.push(v)
    else if (v !== undefined && v !== null) texts.push(JSON.stringify(v))
  }
  // Blocks nest (a tool result holds blocks), a few levels at most; deeper ones are let go.
  const pushContent = (c: unknown, depth = 0): void => {
    if (typeof c === 'string') texts.push(c)
    else if (Array.isArray(c) && depth < MAX_BLOCK_DEPTH) {
      for (const part of c) {
        if (typeof part === 'string') texts.push(part)
        else if (isObject(part)) pushBlock(part, depth)
      }
    }
  }
  const pushImage = (part: Record<string, unknown>): boolean => {
    const img = imageOf(part, images.length < MAX_SIZED_IMAGES)
    if (img) images.push(img)
    return img !== undefined
  }
  const pushBlock = (part: Record<string, unknown>, depth: number): void => {
    if (pushImage(part)) return
    if (typeof part.text === 'string') texts.push(part.text)
    else if (typeof part.content === 'string' || Array.isArray(part.content)) pushContent(part.content, depth + 1)
    // Mistral's ThinkChunk kept in a history (`{type: "thinking", thinking: [{type: "text", text}]}`),
    // billed as prompt; not Anthropic's thinking block (a string), which is often not billed.
    if (Array.isArray(part.thinking)) pushContent(part.thinking, depth + 1)
    if (typeof part.arguments === 'string') texts.push(part.arguments)
    if (typeof part.output === 'string') texts.push(part.output)
    else if (Array.isArray(part.output)) pushContent(part.output, depth + 1)
    // A Responses shell_call_output's output: what each command printed.
    if (typeof part.stdout === 'string') texts.push(part.stdout)
    if (typeof part.stderr === 'string') texts.push(part.stderr)
    // Anthropic's document block: a plain-text one's text, a custom-content one's blocks (a PDF's
    // base64 data is not text, and is not counted).
    if (part.type === 'document') {
      if (typeof part.title === 'string') texts.push(part.title)
      if (typeof part.context === 'string') texts.push(part.context)
      const src = part.source
      if (isObject(src) && src.type === 'text' && typeof src.data === 'string') texts.push(src.data)
      else if (isObject(src) && src.type === 'content') pushContent(src.content, depth + 1)
    }
    // Anthropic's tool_use (and server_tool_use) block: what the model sent the tool, in the history.
    if (part.type === 'tool_use' || part.type === 'server_tool_use') pushValue(part.input)
    // Bedrock Converse's blocks.
    if (isObject(part.toolUse)) {
      if (typeof part.toolUse.name === 'string') texts.push(part.toolUse.name)
      pushValue(part.toolUse.input)
    }
    if (isObject(part.toolResult)) pushContent(part.toolResult.content, depth + 1)
    // Converse's document block: its text, or its content blocks' text (not its bytes).
    if (isObject(part.document) && isObject(part.document.source)) {
      const src = part.document.source
      if (typeof src.text === 'string') texts.push(src.text)
      else if (Array.isArray(src.content)) pushContent(src.content, depth + 1)
    }
    if (part.json !== undefined) pushValue(part.json)
    if (isObject(part.reasoningContent) && isObject(part.reasoningContent.reasoningText)) pushValue(part.reasoningContent.reasoningText.text)
    // Gemini's parts (its REST API takes their snake_case names too, as Google's examples write them).
    const call = part.functionCall ?? part.function_call
    if (isObject(call) && part.type === undefined) {
      if (typeof call.name === 'string') texts.push(call.name)
      pushValue(call.args)
    }
    const response = part.functionResponse ?? part.function_response
    if (isObject(response)) {
      if (typeof response.name === 'string') texts.push(response.name)
      pushValue(response.response)
    }
    // Gemini's code execution: the code the model ran, and what it printed.
    const code = part.executableCode ?? part.executable_code
    if (isObject(code) && typeof code.code === 'string') texts.push(code.code)
    const ran = part.codeExecutionResult ?? part.code_execution_result
    if (isObject(ran) && typeof ran.output === 'string') texts.push(ran.output)
  }
  // Mistral's Conversations API: `inputs`, a string or entries as messages.
  for (const list of [body.messages, Array.isArray(body.input) ? body.input : null, Array.isArray(body.inputs) ? body.inputs : null]) {
    if (!Array.isArray(list)) continue
    for (const m of list) {
      messages++
      if (!isObject(m)) continue
      if (typeof m.role === 'string') texts.push(m.role)
      if (typeof m.name === 'string') texts.push(m.name)
      pushContent(m.content)
      if (Array.isArray(m.tool_calls)) texts.push(JSON.stringify(m.tool_calls))
      // Chat Completions' legacy function call (the `functions` API).
      if (isObject(m.function_call)) {
        if (typeof m.function_call.name === 'string') texts.push(m.function_call.name)
        if (typeof m.function_call.arguments === 'string') texts.push(m.function_call.arguments)
      }
      if (typeof m.arguments === 'string') texts.push(m.arguments)
      if (typeof m.output === 'string') texts.push(m.output)
      // Responses items: a function_call_output's output as content parts, a custom tool call's
      // input (Codex's apply_patch), a reasoning item's summary.
      else if (Array.isArray(m.output)) pushContent(m.output)
      // A computer_call_output's screenshot.
      else if (isObject(m.output)) pushImage(m.output)
      if (typeof m.input === 'string') texts.push(m.input)
      if (Array.isArray(m.summary)) pushContent(m.summary)
      // Built-in tools' calls: apply_patch's operation (the patch), shell's and local_shell's
      // action (the commands), the code interpreter's code.
      if (isObject(m.operation)) pushValue(m.operation)
      if (isObject(m.action)) pushValue(m.action)
      if (typeof m.code === 'string') texts.push(m.code)
    }
  }
  if (typeof body.input === 'string') {
    texts.push(body.input)
    messages++
  }
  if (typeof body.inputs === 'string') {
    texts.push(body.inputs)
    messages++
  }
  // Gemini: contents[].parts[].text and systemInstruction.parts[].text
  if (Array.isArray(body.contents)) {
    for (const c of body.contents) {
      messages++
      if (isObject(c)) pushContent(c.parts)
    }
  }
  const systemInstruction = body.systemInstruction ?? body.system_instruction
  if (isObject(systemInstruction)) pushContent(systemInstruction.parts)
  // Gemini's Interactions API takes it as a string.
  else if (typeof systemInstruction === 'string') texts.push(systemInstruction)
  // Gemini embeddings: embedContent {content: {parts}}, batchEmbedContents {requests: [{content}]}
  if (isObject(body.content)) pushContent(body.content.parts)
  if (Array.isArray(body.requests)) {
    for (const r of body.requests) if (isObject(r) && isObject(r.content)) pushContent(r.content.parts)
  }
  if (typeof body.prompt === 'string') texts.push(body.prompt)
  // Bedrock InvokeModel bodies in a model's own form: Titan Text's `inputText`; Cohere Command R's
  // `message`, its `chat_history` and `preamble`.
  if (typeof body.inputText === 'string') texts.push(body.inputText)
  if (typeof body.message === 'string') texts.push(body.message)
  if (typeof body.preamble === 'string') texts.push(body.preamble)
  if (Array.isArray(body.chat_history)) {
    for (const m of body.chat_history) if (isObject(m) && typeof m.message === 'string') texts.push(m.message)
  }
  if (typeof body.system === 'string') texts.push(body.system)
  else pushContent(body.system)
  if (typeof body.instructions === 'string') texts.push(body.instructions)
  if (Array.isArray(body.tools) && body.tools.length > 0) texts.push(JSON.stringify(body.tools))
  if (Array.isArray(body.functions) && body.functions.length > 0) texts.push(JSON.stringify(body.functions))
  // Bedrock Converse's tool definitions.
  if (isObject(body.toolConfig)) texts.push(JSON.stringify(body.toolConfig))
  return { texts, messages, images }
}

/**
 * A call's usage estimated from its request and the output it streamed: `outputText` counted,
 * times `outputScale` when the meter kept only a share of a longer output (MeterResult.outputScale).
 */
export async function estimateUsage(model: string, requestBody: unknown, outputText: string, outputScale = 1): Promise<Usage> {
  const { texts, messages, images } = promptParts(requestBody)
  const factor = familyFactor(model)
  let pictured = 0
  for (const img of images) pictured += imageTokens(model, img)
  const [input, output] = await estimator().count(encodingFor(model), [sampleOfJoined(texts), sampleOf(outputText)])
  const u = emptyUsage()
  u.input_tokens = (input ? Math.ceil(input * factor) : 0) + (messages ? messages * 3 + 3 : 0) + pictured
  u.output_tokens = output ? Math.ceil(output * factor * scaleOf(outputScale)) : 0
  return u
}

/** A share's scale as given, or 1 when it is not a real one (undefined, NaN, below 1). */
function scaleOf(scale: number): number {
  return Number.isFinite(scale) && scale > 1 ? scale : 1
}

/**
 * The output tokens of a response whose prompt-side usage the provider did report but whose output
 * count it never sent (an Anthropic stream cut before its last `message_delta`): `outputText`
 * counted as `estimateUsage` counts it, times `scale` when only a share of the output was kept.
 */
export async function estimateOutputTokens(model: string, outputText: string, scale = 1): Promise<number> {
  if (!outputText) return 0
  const [output] = await estimator().count(encodingFor(model), [sampleOf(outputText)])
  return output ? Math.ceil(output * familyFactor(model) * scaleOf(scale)) : 0
}
