import base from './jest.config.js';

/**
 * The real-cluster suites (test/k8s/suites, issue [R]): run by `npm run test:cluster` (test/k8s/run.ts) in band,
 * inside a private mount namespace; `npm test` ignores them (jest.config.js).
 * @type {import('jest').Config}
 */
export default {
  ...base,
  roots: ['<rootDir>/test/k8s'],
  testPathIgnorePatterns: ['/node_modules/'],
  maxWorkers: 1,
  // every test's name in the log, also with --json (few tests, long ones)
  verbose: true,
  // A suite starts its own cluster in beforeAll; single tests wait for kubelet's timings.
  testTimeout: 120_000,
};
