/**
 * Issue [P] item 3: the agent builds its kubelet gRPC packages from the JSON descriptors of
 * src/generated/descriptors.ts instead of parsing `proto/` at every start. These tests fail when a descriptor is out
 * of date (run `npm run gen:descriptors`) or defines a package differently from proto-loader's `loadSync` of the file.
 */
import { describe, expect, test } from '@jest/globals';
import * as protoLoader from '@grpc/proto-loader';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import * as descriptors from '../../src/generated/descriptors.js';
import { LOADER_OPTIONS } from '../../src/kubelet/proto.js';
import { DESCRIPTOR_FILES, DESCRIPTORS_TS, descriptorsSource } from '../../scripts/gen-descriptors.js';

/** A package definition without its functions and file descriptors: names, paths, streaming flags, message types. */
function shape(def: protoLoader.PackageDefinition): unknown {
  return JSON.parse(
    JSON.stringify(def, (key, value: unknown) =>
      key === 'fileDescriptorProtos' || typeof value === 'function' ? undefined : value,
    ),
  );
}

describe('kubelet proto descriptors (issue [P] item 3)', () => {
  test('src/generated/descriptors.ts is what npm run gen:descriptors writes from proto/', () => {
    expect(fs.readFileSync(DESCRIPTORS_TS, 'utf8')).toBe(descriptorsSource());
  });

  test.each(Object.entries(DESCRIPTOR_FILES))(
    '%s: fromJSON defines the same services and messages as loadSync(%s)',
    (name, file) => {
      const json = (descriptors as Record<string, Record<string, unknown>>)[name]!;
      const fromJson = shape(protoLoader.fromJSON(json, LOADER_OPTIONS));
      const parsed = shape(protoLoader.loadSync(path.join(PROJECT_ROOT, file), LOADER_OPTIONS));
      expect(fromJson).toEqual(parsed);
    },
  );
});
