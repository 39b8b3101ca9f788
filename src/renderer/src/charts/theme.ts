import { onBeforeUnmount, ref } from 'vue'

/** The colours the charts need, read from the CSS custom properties of the current theme. */
export interface ChartTheme {
  text: string
  muted: string
  grid: string
  surface: string
  border: string
  series: string[]
  font: string
}

export function readChartTheme(): ChartTheme {
  const css = getComputedStyle(document.documentElement)
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback
  return {
    text: v('--text', '#101828'),
    muted: v('--muted', '#667085'),
    grid: v('--grid', 'rgba(0,0,0,0.06)'),
    surface: v('--surface', '#fff'),
    border: v('--border', '#e4e7ec'),
    series: [1, 2, 3, 4, 5, 6, 7, 8].map((i) => v(`--chart-${i}`, '#f2541b')),
    font: v('--font', 'system-ui, sans-serif'),
  }
}

/** A counter that changes whenever the system switches between light and dark. */
export function useThemeVersion() {
  const version = ref(0)
  const mq = typeof window.matchMedia === 'function' ? window.matchMedia('(prefers-color-scheme: dark)') : null
  const bump = () => version.value++
  mq?.addEventListener?.('change', bump)
  onBeforeUnmount(() => mq?.removeEventListener?.('change', bump))
  return version
}

/** `#rrggbb` (or any CSS colour Chart.js accepts) with an alpha, for area fills. */
export function withAlpha(color: string, alpha: number): string {
  const m = /^#([0-9a-f]{6})$/i.exec(color.trim())
  if (!m) return color
  const n = parseInt(m[1], 16)
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`
}

/** Preferred palette slots for the providers people know (OpenAI green, Anthropic clay, Gemini blue). */
const PREFERRED: Record<string, number> = { openai: 3, anthropic: 0, gemini: 2, google: 2, azure: 2, bedrock: 4, mistral: 4, groq: 5, openrouter: 1, deepseek: 6 }

/** One distinct colour per name, in order: the preferred slot when still free, else the next free one. */
export function seriesColors(names: string[], theme: ChartTheme): string[] {
  const used = new Set<number>()
  const n = theme.series.length
  return names.map((name) => {
    let slot = PREFERRED[name.toLowerCase()]
    if (slot === undefined || used.has(slot)) {
      slot = 0
      while (used.has(slot) && used.size < n) slot++
    }
    used.add(slot % n)
    return theme.series[slot % n]
  })
}
