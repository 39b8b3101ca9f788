import { defineConfig } from 'vitest/config'
import vue from '@vitejs/plugin-vue'

export default defineConfig({
  plugins: [vue()],
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // The real agent CLIs run in their own suite: npm run test:agents (test/real-agents).
    exclude: ['**/node_modules/**', 'test/real-agents/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Tests never fetch price data from the internet (test/pricing uses a local price-data server).
    env: { BURNRATE_PRICE_AUTO_UPDATE: 'false' },
  },
})
