/**
 * A Responses API answer as the mock upstream sends it: `output` items, the tools the request
 * declared (echoed, as OpenAI does), and a usage of `input` and `output` tokens (none cached).
 */
export function responsesAnswer(idPrefix: string, model: string, output: object[], tools: object[], input: number, out: number) {
  return {
    id: idPrefix + Math.random().toString(36).slice(2),
    object: 'response',
    created_at: 1764950000,
    status: 'completed',
    model,
    output,
    tools,
    usage: { input_tokens: input, input_tokens_details: { cached_tokens: 0 }, output_tokens: out, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: input + out },
  }
}
