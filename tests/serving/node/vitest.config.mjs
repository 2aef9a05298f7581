import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['vitest-*.test.mjs'],
    globalSetup: './openprogram-vitest.mjs',
    setupFiles: './openprogram-vitest.mjs',
  },
});
