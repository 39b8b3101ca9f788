// The runtime boundary, enforced: the server core (src/main) never imports a value from
// `electron` (only src/main/desktop and the Electron entry do); the renderer reaches data only
// over HTTP, so it imports neither Node nor src/main; src/shared imports nothing runtime-specific;
// src/main imports express's types only.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

const electronOnlyInDesktop = {
  'no-restricted-imports': [
    'error',
    {
      paths: [{ name: 'electron', message: 'Only src/main/desktop may import electron; the server core runs under plain Node.' }],
      patterns: [
        { group: ['electron/*'], message: 'Only src/main/desktop may import electron.' },
        // src/main/desktop imports electron: a module of it would bring electron in with it.
        { group: ['**/desktop/*'], message: 'src/main/desktop imports electron: only the Electron entry (src/main/index.ts) may import it.' },
      ],
    },
  ],
  // no-restricted-imports sees static imports only: `await import('electron')` and require('electron') too.
  'no-restricted-syntax': [
    'error',
    { selector: "ImportExpression[source.value=/^electron(\\/|$)/]", message: 'Only src/main/desktop may import electron, dynamically too.' },
    // Any call: require, module.require, or the function createRequire(import.meta.url) returns.
    { selector: "CallExpression[arguments.0.value=/^electron(\\/|$)/]", message: 'Only src/main/desktop may require electron.' },
    { selector: "ImportExpression[source.value=/(^|\\/)desktop\\//]", message: 'src/main/desktop imports electron: only the Electron entry (src/main/index.ts) may import it.' },
    { selector: "CallExpression[arguments.0.value=/(^|\\/)desktop\\//]", message: 'src/main/desktop imports electron: only the Electron entry (src/main/index.ts) may require it.' },
  ],
}

// express and the price library load after start-up (src/main/server/api-app.ts,
// src/main/pricing/library.ts): a value import at the top of a module would load them with the
// server again.
const expressAfterStartup = {
  '@typescript-eslint/no-restricted-imports': [
    'error',
    {
      paths: [
        {
          name: 'express',
          allowTypeImports: true,
          message: 'express loads after start-up (src/main/server/api-app.ts): import its types only; routes get the module from ctx.app.add, other route code from expressModule().',
        },
        {
          name: '@pydantic/genai-prices',
          allowTypeImports: true,
          message: 'The price library loads after start-up (src/main/pricing/library.ts): import its types only; await loadPriceLibrary(), then use priceLibrary().',
        },
      ],
    },
  ],
}

export default tseslint.config(
  { ignores: ['out/**', 'dist/**', 'node_modules/**', '.tools/**', 'coverage/**', 'test/artifacts/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  { files: ['src/main/**/*.ts'], ignores: ['src/main/desktop/**', 'src/main/index.ts'], rules: electronOnlyInDesktop },
  { files: ['src/main/**/*.ts'], ignores: ['src/main/**/*.test.ts'], rules: expressAfterStartup },
  {
    files: ['src/renderer/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*', 'electron', 'electron/*'], message: 'The renderer runs in a browser: no Node or Electron.' },
            { group: ['**/main/**', '../../main/*'], message: 'The renderer talks to the server only over HTTP; share types through src/shared.' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/shared/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['node:*', 'electron', 'electron/*', 'vue', '**/main/**', '**/renderer/**'], message: 'src/shared holds contract types only.' }] },
      ],
    },
  },
)
