/** The express module's type (a value only once loaded: see `loadExpress`). */
export type ExpressModule = typeof import('express')

let loaded: ExpressModule | null = null

/**
 * Loads express (once). No module of the server imports express's value at start-up: the API app
 * (./api-app.ts) loads it when it is built, and route code reaches it through `expressModule()`.
 */
export async function loadExpress(): Promise<ExpressModule> {
  if (loaded) return loaded
  const m = (await import('express')) as unknown as { default?: ExpressModule } & ExpressModule
  loaded = m.default ?? m
  return loaded
}

/** The loaded express module; only route installers call it (they run once it is loaded). */
export function expressModule(): ExpressModule {
  if (!loaded) throw new Error('express is not loaded yet: routes are installed only once the API app is built')
  return loaded
}
