/**
 * GetPreferredAllocation (our extension of spec C.6): choose `size` devices from `available`, honouring
 * `mustInclude`, keeping the choice inside one topology group when it fits, best fit first, healthy devices only.
 * The rule and examples are in docs/allocation.md.
 */
import type { KubeletDevice } from './device-source.js';
import type { NodeFacts } from '../core/chips.js';
import { invalidArgument } from './errors.js';
import { allocationPath } from './topology.js';

/** One container's preferred-allocation question. */
export interface PreferredRequest {
  readonly available: readonly string[];
  readonly mustInclude: readonly string[];
  readonly size: number;
}

interface TreeNode {
  readonly children: TreeNode[];
  /** Device id when the node is a leaf. */
  readonly id?: string;
  /** Position of the first leaf in device order (ties are broken towards lower chips). */
  readonly order: number;
}

interface Marks {
  candidate: Set<string>;
  must: Set<string>;
}

function buildTree(devices: readonly KubeletDevice[], node: NodeFacts): TreeNode {
  type Mutable = { children: Map<string, Mutable>; id?: string; order: number };
  const root: Mutable = { children: new Map(), order: 0 };
  devices.forEach((d, order) => {
    let at = root;
    for (const key of [...allocationPath(d, node), `id:${d.id}`]) {
      let next = at.children.get(key);
      if (!next) {
        next = { children: new Map(), order };
        at.children.set(key, next);
      }
      at = next;
    }
    at.id = d.id;
  });
  const freeze = (m: Mutable): TreeNode => ({
    children: [...m.children.values()].map(freeze).sort((a, b) => a.order - b.order),
    ...(m.id === undefined ? {} : { id: m.id }),
    order: m.order,
  });
  return freeze(root);
}

function count(n: TreeNode, set: Set<string>): number {
  if (n.id !== undefined) return set.has(n.id) ? 1 : 0;
  let total = 0;
  for (const c of n.children) total += count(c, set);
  return total;
}

function takeAll(n: TreeNode, marks: Marks, out: string[]): void {
  if (n.id !== undefined) {
    if (marks.candidate.delete(n.id)) out.push(n.id);
    return;
  }
  for (const c of n.children) takeAll(c, marks, out);
}

/** Picks `need` candidates below `n`, staying in as few and as full-fitting groups as possible. */
function pick(n: TreeNode, need: number, marks: Marks, out: string[]): void {
  if (need <= 0) return;
  if (n.id !== undefined) {
    takeAll(n, marks, out);
    return;
  }
  const kids = n.children
    .map((c) => ({ c, free: count(c, marks.candidate), must: count(c, marks.must) }))
    .filter((k) => k.free > 0);
  // Best fit: among children that can hold the whole need, the one holding must-include devices, else the one
  // with the fewest free devices (keeps bigger groups whole for bigger requests), else the lowest.
  const bestFit = (among: typeof kids, wanted: number) =>
    among
      .filter((k) => k.free >= wanted)
      .sort((a, b) => b.must - a.must || a.free - b.free || a.c.order - b.c.order)[0];
  const fit = bestFit(kids, need);
  if (fit) {
    pick(fit.c, need, marks, out);
    return;
  }
  // The need spans children: fill whole groups, largest first, then best-fit the remainder.
  const spanning = [...kids].sort((a, b) => b.must - a.must || b.free - a.free || a.c.order - b.c.order);
  let left = need;
  for (const [i, k] of spanning.entries()) {
    if (left <= 0) break;
    if (k.free <= left) {
      takeAll(k.c, marks, out);
      left -= k.free;
      continue;
    }
    const rest = spanning.slice(i).map((r) => ({ ...r, free: count(r.c, marks.candidate) }));
    const last = bestFit(rest, left)!;
    pick(last.c, left, marks, out);
    left = 0;
  }
}

function usable(d: KubeletDevice): boolean {
  return d.health === 'Healthy' && !d.manuallySeparated;
}

/**
 * Answers one container request. `devices` are the server's devices as advertised (in device order).
 * Throws an INVALID_ARGUMENT {@link KubeletRequestError} for unknown or duplicate IDs, a must-include ID that is
 * not available, or a size that is not in [max(1, |mustInclude|), |available|]. May return fewer than `size` IDs
 * when not enough healthy devices are available; kubelet then chooses the rest itself.
 */
export function preferredAllocation(
  req: PreferredRequest,
  devices: readonly KubeletDevice[],
  node: NodeFacts,
): string[] {
  const byId = new Map(devices.map((d) => [d.id, d]));
  const available = new Set<string>();
  for (const id of req.available) {
    if (!byId.has(id)) throw invalidArgument(`unknown device ID ${JSON.stringify(id)} in available_deviceIDs`);
    if (available.has(id)) throw invalidArgument(`duplicate device ID ${id} in available_deviceIDs`);
    available.add(id);
  }
  const must = new Set<string>();
  for (const id of req.mustInclude) {
    if (!available.has(id)) throw invalidArgument(`must-include device ID ${JSON.stringify(id)} is not available`);
    if (must.has(id)) throw invalidArgument(`duplicate device ID ${id} in must_include_deviceIDs`);
    must.add(id);
  }
  if (!Number.isInteger(req.size) || req.size < 1 || req.size < must.size || req.size > available.size) {
    throw invalidArgument(
      `allocation_size ${req.size} is outside [${Math.max(1, must.size)}, ${available.size}] (available devices)`,
    );
  }
  const candidate = new Set([...available].filter((id) => !must.has(id) && usable(byId.get(id)!)));
  const out: string[] = [];
  pick(buildTree(devices, node), req.size - must.size, { candidate, must }, out);
  const order = new Map(devices.map((d, i) => [d.id, i]));
  return [...must, ...out].sort((a, b) => order.get(a)! - order.get(b)!);
}
