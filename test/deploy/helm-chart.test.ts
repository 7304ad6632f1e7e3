/**
 * Issue [R] item 6, the Helm chart of deploy/helm, checked without helm (so in `npm test`, which needs no Go): the
 * objects that no value changes (RBAC, admission policies, the policy ConfigMap, the gRPC Service, the monitoring
 * objects and dashboard) are the kustomize sources themselves, through symbolic links in the chart's files/ folder,
 * never copies; every link resolves and is used; the chart's versions are the package's; every overlay has its values
 * file. `helm lint` and the comparison with `kubectl kustomize` run in test/k8s/suites/helm.test.ts
 * (`npm run test:cluster`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from '@jest/globals';
import { PROJECT_ROOT } from '../../src/core/paths.js';
import { OVERLAYS_DIR } from './deploy-files.js';

const CHART = path.join(PROJECT_ROOT, 'deploy', 'helm', 'ascend-npu-agent');
const FILES = path.join(CHART, 'files');
const TEMPLATES = path.join(CHART, 'templates');
const DEPLOY = path.join(PROJECT_ROOT, 'deploy');
const VERSION = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;

const files = fs.readdirSync(FILES).sort();
const templateText = fs
  .readdirSync(TEMPLATES)
  .map((f) => fs.readFileSync(path.join(TEMPLATES, f), 'utf8'))
  .join('\n');
const filesGot = [...templateText.matchAll(/\.Files\.Get "files\/([^"]+)"/g)].map((m) => m[1]!);

describe('issue [R] 6 the chart shares the kustomize sources instead of copying them', () => {
  test.each(files.map((f) => [f]))(
    'files/%s is a symbolic link to a file of deploy/ outside the chart, and it resolves',
    (f) => {
      const p = path.join(FILES, f);
      expect(fs.lstatSync(p).isSymbolicLink()).toBe(true);
      const target = fs.realpathSync(p);
      expect(target.startsWith(`${fs.realpathSync(DEPLOY)}${path.sep}`)).toBe(true);
      expect(target.startsWith(fs.realpathSync(path.join(DEPLOY, 'helm')))).toBe(false);
      expect(fs.statSync(target).isFile()).toBe(true);
    },
  );

  test('every file the templates read is in files/, and every file of files/ is read by a template', () => {
    expect([...new Set(filesGot)].sort()).toEqual(files);
  });
});

describe('issue [R] 6 chart metadata', () => {
  test('Chart.yaml: version and appVersion (the image tag) are the package.json version', () => {
    const chartYaml = fs.readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8');
    expect(chartYaml).toMatch(new RegExp(`^version: ${VERSION.replace(/\./g, '\\.')}$`, 'm'));
    expect(chartYaml).toMatch(new RegExp(`^appVersion: '${VERSION.replace(/\./g, '\\.')}'$`, 'm'));
  });

  test('every overlay of deploy/overlays has its values file in deploy/helm/values, and no values file is stale', () => {
    const overlays = fs
      .readdirSync(path.join(PROJECT_ROOT, OVERLAYS_DIR), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    const values = fs
      .readdirSync(path.join(DEPLOY, 'helm', 'values'))
      .map((f) => f.replace(/\.yaml$/, ''))
      .sort();
    expect(values).toEqual(overlays);
  });
});
