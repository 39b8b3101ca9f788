import { isObject } from '../metering/usage'

/** What a Batch object says of the batch whose output file it names. */
export interface BatchOfFile {
  /** The model it ran (`model`), '' when it names none. */
  model: string
  /** The endpoint its requests ran on (`endpoint`: `/v1/images/generations`). */
  endpoint: string
}

/** The batches recently followed through this Burnrate, by their output file's id. */
const FILES = new Map<string, BatchOfFile>()
/** Batches remembered at most (their answers come from clients: bounded). */
const MAX_FILES = 1000

/**
 * Notes the batches a Batch API answer describes (one Batch object, or a list of them: `GET
 * /v1/batches`), by their `output_file_id`: the output file's lines of image requests name no
 * model (an image answer has none), which the batch does (`model`), and the SDKs retrieve a batch
 * just before reading its output file (./openai-batch.ts).
 */
export function noteBatches(body: Record<string, any>): void {
  const list = body.object === 'list' && Array.isArray(body.data) ? body.data : [body]
  for (const b of list) {
    if (!isObject(b) || b.object !== 'batch' || typeof b.output_file_id !== 'string' || !b.output_file_id) continue
    const model = typeof b.model === 'string' ? b.model.slice(0, 200) : ''
    const endpoint = typeof b.endpoint === 'string' ? b.endpoint.slice(0, 200) : ''
    const id = b.output_file_id.slice(0, 200)
    if (FILES.size >= MAX_FILES && !FILES.has(id)) FILES.delete(FILES.keys().next().value as string)
    FILES.set(id, { model, endpoint })
  }
}

/** The batch whose output file is `fileId`, as the last Batch object through this Burnrate said; undefined when none did. */
export function batchOfFile(fileId: string): BatchOfFile | undefined {
  return fileId ? FILES.get(fileId) : undefined
}
