import { defineConfig } from 'vitest/config'
import vue from '@vitejs/plugin-vue'

export default defineConfig({
  plugins: [vue()],
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Tests wait for conditions, not for fixed times: these limits only bound a failure, and are
    // wide enough for a busy 2-core machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    expect: { poll: { timeout: 30_000 } },
    pool: 'forks',
  },
})
