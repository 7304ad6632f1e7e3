/**
 * The DeviceClasses of the driver (issue [DRA] item 4; shipped in deploy/components/dra/deviceclasses.yaml, which
 * test/deploy/dra-manifests.test.ts keeps equal to {@link deviceClasses}): Huawei's `npu.huawei.com` (whole chips of
 * any kind), and one class per resource name of spec B.3 with `extendedResourceName` (DRAExtendedResource, GA at
 * 1.37), so that a pod asking for `huawei.com/Ascend910: 2` — unchanged, Volcano jobs included — is allocated
 * through DRA on a node that does not advertise the resource through a device plugin, with the fault-aware taints.
 * The static vNPU resources (`huawei.com/Ascend910-<spec>`, `huawei.com/Ascend310P-<spec>`) select the partitions of
 * that template. `huawei.com/npu-core` (dynamic vNPU's AI-core pseudo-devices) has no DRA class: a partition is the
 * DRA way to ask for part of a chip.
 *
 * Every selector reads only attributes every device of the driver has (`deviceType`, `partition`): a CEL selector that
 * reads a missing attribute fails the allocation instead of not matching.
 */
import { DRA_ATTR, DRA_DRIVER, WHOLE_CHIP } from '../core/dra-devices.js';
import type { ChipKind } from '../core/chips.js';
import { RESOURCE_PREFIX } from '../core/device-names.js';
import { templateSpec, templatesOf } from '../kubelet/vnpu-core.js';

/** A DeviceClass as shipped. */
export interface DeviceClass {
  readonly apiVersion: 'resource.k8s.io/v1';
  readonly kind: 'DeviceClass';
  readonly metadata: { readonly name: string; readonly labels: Readonly<Record<string, string>> };
  readonly spec: {
    readonly selectors: readonly { readonly cel: { readonly expression: string } }[];
    readonly extendedResourceName?: string;
  };
}

/** The resource families of spec B.3 and the chip kinds behind them. */
const FAMILIES: readonly { readonly type: string; readonly kinds: readonly ChipKind[] }[] = [
  { type: 'Ascend910', kinds: ['Ascend910', 'Ascend910B', 'Ascend910A3'] },
  { type: 'Ascend310P', kinds: ['Ascend310P'] },
  { type: 'Ascend310', kinds: ['Ascend310', 'Ascend310B'] },
  { type: 'npu', kinds: ['Ascend910A5'] },
];

const attr = (name: string): string => `device.attributes['${DRA_DRIVER}'].${name}`;
const kindsIn = (kinds: readonly ChipKind[]): string =>
  kinds.length === 1
    ? `${attr(DRA_ATTR.deviceType)} == '${kinds[0]!}'`
    : `${attr(DRA_ATTR.deviceType)} in [${kinds.map((k) => `'${k}'`).join(', ')}]`;

function deviceClass(name: string, expression: string, extendedResourceName?: string): DeviceClass {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'DeviceClass',
    metadata: { name, labels: { app: 'ascend-npu-agent' } },
    spec: {
      selectors: [{ cel: { expression: `device.driver == '${DRA_DRIVER}' && ${expression}` } }],
      ...(extendedResourceName !== undefined ? { extendedResourceName } : {}),
    },
  };
}

/** Name of the class of a resource family (`ascend910.npu.huawei.com`; A5 `ascend910a5.npu.huawei.com`). */
export function familyClassName(type: string): string {
  return `${type === 'npu' ? 'ascend910a5' : type.toLowerCase()}.${DRA_DRIVER}`;
}

/** Name of the class of a vNPU template (`ascend910-vir05-1c-16g.npu.huawei.com`). */
export function templateClassName(type: string, template: string): string {
  return `${type.toLowerCase()}-${template.replaceAll('_', '-')}.${DRA_DRIVER}`;
}

/** Every DeviceClass of the driver, in a fixed order. */
export function deviceClasses(): DeviceClass[] {
  const whole = `${attr(DRA_ATTR.partition)} == '${WHOLE_CHIP}'`;
  const out: DeviceClass[] = [deviceClass(DRA_DRIVER, whole)];
  for (const f of FAMILIES) {
    out.push(deviceClass(familyClassName(f.type), `${kindsIn(f.kinds)} && ${whole}`, `${RESOURCE_PREFIX}${f.type}`));
  }
  for (const f of FAMILIES) {
    const byTemplate = new Map<string, ChipKind[]>();
    for (const k of f.kinds) for (const t of templatesOf(k)) byTemplate.set(t, [...(byTemplate.get(t) ?? []), k]);
    for (const [template, kinds] of byTemplate) {
      const spec = templateSpec(template);
      if (spec === undefined) continue;
      out.push(
        deviceClass(
          templateClassName(f.type, template),
          `${kindsIn(kinds)} && ${attr(DRA_ATTR.partition)} == '${template}'`,
          `${RESOURCE_PREFIX}${f.type}-${spec}`,
        ),
      );
    }
  }
  return out;
}
