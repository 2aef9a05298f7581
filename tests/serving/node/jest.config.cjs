module.exports = {
  testMatch: ['<rootDir>/jest-*.test.cjs'],
  globalSetup: './openprogram-jest.cjs',
  globalTeardown: './openprogram-jest.cjs',
  setupFilesAfterEnv: ['./openprogram-jest.cjs'],
};
