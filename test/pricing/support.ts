/** An OpenAI chat answer for `model` with these token counts (a model the bundled prices may not know). */
export function chatAnswer(model: string, prompt: number, completion: number): string {
  return JSON.stringify({
    id: 'chatcmpl-x',
    object: 'chat.completion',
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  })
}
