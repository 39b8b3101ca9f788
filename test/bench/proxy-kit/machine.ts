import { cpus, totalmem } from 'node:os'

/** One line naming the machine the figures came from (they mean little without it). */
export function describeMachine(): string {
  const c = cpus()
  const model = c[0]?.model?.trim() ?? 'unknown CPU'
  const gib = (totalmem() / 2 ** 30).toFixed(1)
  return `${c.length} x ${model}, ${gib} GiB RAM, ${process.platform} ${process.arch}, Node ${process.version}`
}
