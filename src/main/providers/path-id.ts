/**
 * The id a read of a job names in its path (`read`'s first group: an xAI video's, a Perplexity
 * async job's), percent-decoded as the provider reads it; as sent when it is not valid
 * percent-encoding; undefined when the path names none.
 */
export function pathId(read: RegExp, path: string): string | undefined {
  const id = read.exec(path)?.[1]
  if (!id) return undefined
  try {
    return decodeURIComponent(id)
  } catch {
    return id
  }
}
