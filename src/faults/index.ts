/**
 * The fault engine (architecture §2: pure, clock-injected). Public surface.
 */
export * from './codes.js';
export * from './levels.js';
export * from './problems.js';
export * from './fault-code-table.js';
export * from './switch-codes.js';
export * from './customization.js';
export * from './policy.js';
export * from './duration.js';
export * from './upgrade-reasons.js';
export * from './engine-types.js';
export { FaultEngine, HBM_CORRELATION_MS, MANUAL_LOGIC_ID_MAX, type StartupResult } from './engine.js';
export * from './state-io.js';
