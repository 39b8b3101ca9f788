import { MAX_LABEL } from '../attribution'

/** How many lanes' settings a socket keeps: past it, the least recently used lane's are let go. */
export const MAX_LANES_KEPT = 64
/**
 * How many bytes of `response.create` frames a socket keeps over its lanes, beside its newest one:
 * past it, the least recently used lanes keep only their settings (`settingsOf`), not their input.
 */
export const MAX_LANE_BYTES_KEPT = 8 * 1024 * 1024

/**
 * What a call is recorded (and a steer gated) as when its lane's frame is not kept whole: the
 * model and what prices or attributes it. Only short values: a client's frame may hold any.
 */
const SETTINGS = ['model', 'service_tier', 'prompt_cache_key', 'max_output_tokens', 'background'] as const

/** The settings of a `response.create` (or of the response object an upstream's `response.created` carries), without its input. */
export function settingsOf(o: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {}
  for (const k of SETTINGS) {
    const v = o[k]
    if ((typeof v === 'string' && v.length <= MAX_LABEL) || typeof v === 'number' || typeof v === 'boolean') kept[k] = v
  }
  return kept
}

/** What a lane's entry costs when it holds only its settings: its name (the client's, of any length) and at most five short values. */
const settingsBytes = (lane: string) => lane.length + SETTINGS.length * MAX_LABEL

interface Kept {
  frame: Record<string, unknown>
  bytes: number
}

/**
 * Per lane of one Responses socket, its last `response.create` sent upstream: what a successor
 * response the server starts there by itself is recorded as, and a steer there gated as. The
 * lanes are the client's to name, each frame up to the body limit: at most MAX_LANES_KEPT lanes
 * are kept and MAX_LANE_BYTES_KEPT bytes of their frames (beside the newest), the least recently
 * used first let go (their input, then the lane). A lane not kept is no call unrecorded: its
 * successor is recorded from the response's own `response.created` (./call-settings.ts).
 */
export class LaneSettings {
  private readonly lanes = new Map<string, Kept>()
  private bytes = 0

  /** `frame` (`bytes` long) is the last `response.create` sent in `lane`. */
  set(lane: string, frame: Record<string, unknown>, bytes: number): void {
    this.drop(lane)
    this.lanes.set(lane, { frame, bytes })
    this.bytes += bytes
    while (this.lanes.size > MAX_LANES_KEPT) this.drop(this.lanes.keys().next().value!)
    // The bound is on the lanes beside the newest, which keeps its frame whole.
    const within = () => this.bytes - bytes <= MAX_LANE_BYTES_KEPT
    // The least recently used lanes first keep only their settings...
    for (const [l, k] of this.lanes) {
      if (within()) return
      const light = settingsBytes(l)
      if (l === lane || k.bytes <= light) continue
      this.lanes.set(l, { frame: settingsOf(k.frame), bytes: light })
      this.bytes -= k.bytes - light
    }
    // ...and lanes whose names alone are over the bound are let go.
    for (const l of this.lanes.keys()) {
      if (within()) return
      if (l !== lane) this.drop(l)
    }
  }

  /** `lane`'s last `response.create` (or its settings), if kept; the lane is now the most recently used. */
  get(lane: string): Record<string, unknown> | undefined {
    const k = this.lanes.get(lane)
    if (!k) return undefined
    this.lanes.delete(lane)
    this.lanes.set(lane, k)
    return k.frame
  }

  /** How many lanes are kept, and the bytes they hold (for tests). */
  held(): { lanes: number; bytes: number } {
    return { lanes: this.lanes.size, bytes: this.bytes }
  }

  private drop(lane: string): void {
    const k = this.lanes.get(lane)
    if (!k) return
    this.bytes -= k.bytes
    this.lanes.delete(lane)
  }
}
