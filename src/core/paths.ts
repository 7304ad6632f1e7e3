/**
 * Where the package and its build outputs are: the one place that knows the layout of the checkout (architecture
 * §5), so that no layer imports another for a path.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Root of the package: `src/core/x.ts` and `dist/core/x.js` are both two levels below it. */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where `npm ci` puts the mock library (architecture §5). */
export const MOCK_DCMI_LIBRARY = path.join(PROJECT_ROOT, 'build', 'Release', 'libdcmi.so');
/** Where `npm ci` puts the mock switch library `liblingqu-dcmi.so` (spec L.9, scenarios/README.md "Switch"). */
export const MOCK_SWITCH_LIBRARY = path.join(PROJECT_ROOT, 'build', 'Release', 'liblingqu-dcmi.so');
/** Where `npm ci` puts the mock `hccn_tool` (architecture §5). */
export const MOCK_HCCN_TOOL = path.join(PROJECT_ROOT, 'build', 'Release', 'hccn_tool');
