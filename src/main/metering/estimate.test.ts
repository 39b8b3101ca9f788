import { describe, expect, it } from 'vitest'
import { promptParts } from './estimate'

describe('promptParts', () => {
  it("reads Gemini Code Assist's wrapped request as the Gemini request it wraps", () => {
    const gemini = {
      contents: [
        { role: 'user', parts: [{ text: 'Count to 100' }] },
        { role: 'model', parts: [{ text: '1, 2, 3' }] },
      ],
      systemInstruction: { parts: [{ text: 'You are Gemini CLI.' }] },
      tools: [{ functionDeclarations: [{ name: 'read_file' }] }],
    }
    const wrapped = { model: 'gemini-2.5-pro', project: 'p', user_prompt_id: 'u', request: { ...gemini, session_id: 's' } }
    expect(promptParts(wrapped)).toEqual(promptParts(gemini))
    expect(promptParts(wrapped).messages).toBe(2)
    expect(promptParts(wrapped).texts).toContain('You are Gemini CLI.')
  })
})
