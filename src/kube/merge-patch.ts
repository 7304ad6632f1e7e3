/**
 * The request option that makes a client-node `patch*` call a JSON merge patch. Imported from the two small files
 * that define it rather than from the package index, which loads every generated model and API (≈ 60 MiB of RSS);
 * {@link KubeClient} reads the same option.
 */
import { setHeaderOptions } from '@kubernetes/client-node/dist/middleware.js';
import { PatchStrategy } from '@kubernetes/client-node/dist/patch.js';

export const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
