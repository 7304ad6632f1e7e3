import { createDefaultEsmPreset } from 'ts-jest';

/** @type {import('jest').Config} */
export default {
  ...createDefaultEsmPreset({ tsconfig: 'tsconfig.json' }),
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // test/k8s: the real-cluster suites, run by `npm run test:cluster` (jest.cluster.config.js), not by `npm test`.
  testPathIgnorePatterns: ['/node_modules/', '/test/k8s/'],
  // ESM: '../src/x.js' specifiers map back to the .ts sources.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testTimeout: 20000,
};
