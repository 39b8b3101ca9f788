/**
 * The figures table `npm run bench` prints at the end: each figure beside its baseline (measured
 * in the same run) and its goal, and whether the goal is met. Every bench adds its rows with
 * `row(...)`; `index.ts` prints them all once every bench has run.
 *
 * A goal is a comparison: against the baseline as a ratio (`<= 1.1x`, `>= 1.0x`: value / baseline)
 * or against the value itself, in its unit (`< 300`, `>= 200000`). Anything else is printed as
 * written and judged `-`.
 */

export interface Row {
  name: string
  value: number
  /** The same figure for the baseline in the same run; null when the goal is absolute. */
  baseline: number | null
  goal: string
  unit: string
}

const rows: Row[] = []

/** Adds one figure to the table. */
export function row(name: string, value: number, baseline: number | null, goal: string, unit: string): void {
  rows.push({ name, value, baseline, goal, unit })
}

/** The rows added so far (in order). */
export function allRows(): readonly Row[] {
  return rows
}

const GOAL = /^\s*(<=|>=|<|>)\s*([0-9]+(?:\.[0-9]+)?)\s*(x?)\s*$/

/** 'met', 'NOT MET', or '-' when the goal cannot be judged (not a comparison, or a ratio without a baseline). */
export function judge(r: Row): 'met' | 'NOT MET' | '-' {
  const m = GOAL.exec(r.goal)
  if (!m || !Number.isFinite(r.value)) return '-'
  let v = r.value
  if (m[3] === 'x') {
    if (r.baseline === null || !(r.baseline > 0)) return '-'
    v = r.value / r.baseline
  }
  const t = Number(m[2])
  const ok = m[1] === '<=' ? v <= t : m[1] === '>=' ? v >= t : m[1] === '<' ? v < t : v > t
  return ok ? 'met' : 'NOT MET'
}

function num(n: number): string {
  if (!Number.isFinite(n)) return String(n)
  const a = Math.abs(n)
  if (a >= 1000) return Math.round(n).toLocaleString('en-US')
  if (a >= 100) return n.toFixed(0)
  if (a >= 10) return n.toFixed(1)
  return n.toFixed(3)
}

/** The table as markdown (readable in a terminal, pasteable into the README). */
export function formatTable(list: readonly Row[] = rows): string {
  const out = ['| figure | value | baseline | ratio | goal | |', '|---|---:|---:|---:|---|---|']
  for (const r of list) {
    const unit = r.unit ? ` ${r.unit}` : ''
    const base = r.baseline === null ? '-' : `${num(r.baseline)}${unit}`
    const ratio = r.baseline !== null && r.baseline > 0 ? `${(r.value / r.baseline).toFixed(2)}x` : '-'
    out.push(`| ${r.name} | ${num(r.value)}${unit} | ${base} | ${ratio} | ${r.goal} | ${judge(r)} |`)
  }
  return out.join('\n')
}

/** Prints the table (nothing when no bench added a row). */
export function printReport(): void {
  if (rows.length === 0) return
  process.stdout.write(`\n## Figures against baselines and goals\n\n${formatTable()}\n`)
}
