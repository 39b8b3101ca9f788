import type { Responder } from './mock-upstream'

/** A Chat Completions answer for `model` (1,200 prompt and 300 completion tokens), under answer id `id`. */
export const chatAnswer = (id: string, model: string) => ({
  id,
  object: 'chat.completion',
  created: 1_700_000_000,
  model,
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500 },
})

/** An upstream answering each call for the model it asked for (gpt-4o-mini when it names none): a priced model or one no price knows. */
export const modelEchoUpstream =
  (id: string): Responder =>
  (req) => {
    const model = (JSON.parse(req.body.toString() || '{}') as { model?: string }).model ?? 'gpt-4o-mini'
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(chatAnswer(id, model)) }
  }
