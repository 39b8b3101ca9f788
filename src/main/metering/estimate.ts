import { emptyUsage, isObject, type Usage } from './usage'

/**
 * Token estimates for responses that carry no usage (an OpenAI stream without
 * `stream_options.include_usage`). The counts come from a real BPE tokenizer (gpt-tokenizer),
 * with the encoding of the model's family, and OpenAI's documented chat overhead
 * (3 tokens per message, 3 to prime the reply). Loaded on first use, off the hot path.
 */

type Counter = (text: string) => number

let o200k: Promise<Counter> | undefined
let cl100k: Promise<Counter> | undefined

function usesO200k(model: string): boolean {
  return /^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o\d|chatgpt-4o|gpt-oss|codex)/i.test(model.replace(/^.*\//, ''))
}

/**
 * Models of other families have their own tokenizers, which gpt-tokenizer does not have; they
 * are counted with cl100k_base, scaled by how many more tokens the family's tokenizer makes
 * of the same text. Claude: x1.2, measured on the Anthropic recordings in test/fixtures
 * (their prose: cl100k 168 and 189 tokens where Claude billed 201 and 221). Others: x1.
 */
const FAMILY_FACTORS: [RegExp, number][] = [[/claude/i, 1.2]]

const scaled = new Map<number, Promise<Counter>>()

export function counterFor(model: string): Promise<Counter> {
  const factor = FAMILY_FACTORS.find(([re]) => re.test(model))?.[1]
  if (factor) {
    let c = scaled.get(factor)
    if (!c) {
      c = counterFor('').then((base) => (t: string) => Math.ceil(base(t) * factor))
      scaled.set(factor, c)
    }
    return c
  }
  if (usesO200k(model)) {
    o200k ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => (t: string) => m.countTokens(t))
    return o200k
  }
  cl100k ??= import('gpt-tokenizer/encoding/cl100k_base').then((m) => (t: string) => m.countTokens(t))
  return cl100k
}

/** Every piece of text a request sends as its prompt, and how many messages hold it. */
export function promptParts(body: unknown): { texts: string[]; messages: number } {
  const texts: string[] = []
  let messages = 0
  if (!isObject(body)) return { texts, messages }
  const pushContent = (c: unknown): void => {
    if (typeof c === 'string') texts.push(c)
    else if (Array.isArray(c)) {
      for (const part of c) {
        if (typeof part === 'string') texts.push(part)
        else if (isObject(part)) {
          if (typeof part.text === 'string') texts.push(part.text)
          else if (typeof part.content === 'string' || Array.isArray(part.content)) pushContent(part.content)
          if (typeof part.arguments === 'string') texts.push(part.arguments)
          if (typeof part.output === 'string') texts.push(part.output)
        }
      }
    }
  }
  for (const list of [body.messages, Array.isArray(body.input) ? body.input : null]) {
    if (!Array.isArray(list)) continue
    for (const m of list) {
      messages++
      if (!isObject(m)) continue
      if (typeof m.role === 'string') texts.push(m.role)
      if (typeof m.name === 'string') texts.push(m.name)
      pushContent(m.content)
      if (Array.isArray(m.tool_calls)) texts.push(JSON.stringify(m.tool_calls))
      if (typeof m.arguments === 'string') texts.push(m.arguments)
      if (typeof m.output === 'string') texts.push(m.output)
    }
  }
  if (typeof body.input === 'string') {
    texts.push(body.input)
    messages++
  }
  // Gemini: contents[].parts[].text and systemInstruction.parts[].text
  if (Array.isArray(body.contents)) {
    for (const c of body.contents) {
      messages++
      if (isObject(c)) pushContent(c.parts)
    }
  }
  if (isObject(body.systemInstruction)) pushContent(body.systemInstruction.parts)
  // Gemini embeddings: embedContent {content: {parts}}, batchEmbedContents {requests: [{content}]}
  if (isObject(body.content)) pushContent(body.content.parts)
  if (Array.isArray(body.requests)) {
    for (const r of body.requests) if (isObject(r) && isObject(r.content)) pushContent(r.content.parts)
  }
  if (typeof body.prompt === 'string') texts.push(body.prompt)
  if (typeof body.system === 'string') texts.push(body.system)
  else pushContent(body.system)
  if (typeof body.instructions === 'string') texts.push(body.instructions)
  if (Array.isArray(body.tools) && body.tools.length > 0) texts.push(JSON.stringify(body.tools))
  if (Array.isArray(body.functions) && body.functions.length > 0) texts.push(JSON.stringify(body.functions))
  return { texts, messages }
}

export async function estimateUsage(model: string, requestBody: unknown, outputText: string): Promise<Usage> {
  const countTokens = await counterFor(model)
  const { texts, messages } = promptParts(requestBody)
  const u = emptyUsage()
  u.input_tokens = (texts.length ? countTokens(texts.join('\n')) : 0) + (messages ? messages * 3 + 3 : 0)
  u.output_tokens = outputText ? countTokens(outputText) : 0
  return u
}
