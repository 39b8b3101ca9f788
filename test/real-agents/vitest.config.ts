import { defineConfig } from 'vitest/config'

/** The real-agents suite (npm run test:agents): the agent CLIs from npm, one after another. */
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/real-agents/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
    // Each agent runs with a HOME of its own; the suite's process and its Burnrate never see the developer's (test/support/home.ts).
    setupFiles: ['test/support/home.ts'],
  },
})
