import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'
import vue from '@vitejs/plugin-vue'

export default defineConfig({
  plugins: [vue()],
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // The real agent CLIs run in their own suite: npm run test:agents (test/real-agents).
    exclude: ['**/node_modules/**', 'test/real-agents/**'],
    // Tests wait for conditions, not for fixed times: these limits only bound a failure, and are
    // wide enough for a busy 2-core machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    expect: { poll: { timeout: 30_000 } },
    pool: 'forks',
    // Vitest's default is one worker fewer than the cores: one on CI's two, which ran the files one
    // at a time (about 18 minutes). Most of a file's time is waiting (servers, PostgreSQL, Chromium),
    // and the tests hold on a busy machine, so two files run at once on two cores.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // A test starting in the last seconds before midnight waits until after it (test/support/midnight.ts);
    // every test process has an empty home folder of its own, never the developer's (test/support/home.ts).
    setupFiles: ['test/support/home.ts', 'test/support/midnight.ts'],
    // Tests never fetch price data from the internet (test/pricing uses a local price-data server).
    env: { BURNRATE_PRICE_AUTO_UPDATE: 'false' },
  },
})
