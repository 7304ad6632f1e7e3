/**
 * The per-chip "resetting" set shared by the online and the offline reset engines (decision D4, fixing
 * hot-reset.md §7 items 1 and 2): upstream's global `isHotResetOn` / `inResetDev` are replaced by one owner per
 * chip. An engine takes every chip of the group it is about to reset in one call and gives them back when the reset
 * ends, whatever its outcome; a chip held by one engine is skipped by the other.
 *
 * Busy flags of hot-reset.md §4.3 are this set; the per-chip limits live with the engine that applies them (the
 * offline engine's token buckets, §J.2).
 */

/** One per agent, created by the composition root and given to both engines. */
export class ResetCoordinator {
  private readonly held = new Map<number, string>();

  /**
   * Takes every chip of `logicIds` for `owner`, all or nothing: false (and nothing taken) when any of them is
   * already held, by whichever owner. Throws on a malformed id or an empty owner.
   */
  tryAcquire(logicIds: readonly number[], owner: string): boolean {
    checkArgs('tryAcquire', logicIds, owner);
    if (logicIds.some((id) => this.held.has(id))) return false;
    for (const id of logicIds) this.held.set(id, owner);
    return true;
  }

  /**
   * Gives back the chips of `logicIds` held by `owner`; a chip that is not held is ignored. Throws, releasing
   * nothing, when one of them is held by another owner (an engine bug that would otherwise let two resets overlap).
   */
  release(logicIds: readonly number[], owner: string): void {
    checkArgs('release', logicIds, owner);
    for (const id of logicIds) {
      const by = this.held.get(id);
      if (by !== undefined && by !== owner) {
        throw new Error(`reset coordinator: chip ${id} is held by "${by}", not by "${owner}"`);
      }
    }
    for (const id of logicIds) this.held.delete(id);
  }

  /** The owner of a chip in reset, undefined when the chip is not being reset. */
  owner(logicId: number): string | undefined {
    return this.held.get(logicId);
  }

  /** A copy of the set: logic id → owner. */
  resetting(): ReadonlyMap<number, string> {
    return new Map(this.held);
  }
}

function checkArgs(what: string, logicIds: readonly number[], owner: string): void {
  if (typeof owner !== 'string' || owner === '') {
    throw new Error(`reset coordinator ${what}: owner must be a non-empty string, got ${JSON.stringify(owner)}`);
  }
  if (!Array.isArray(logicIds)) throw new Error(`reset coordinator ${what}: logic ids must be an array`);
  for (const id of logicIds) {
    if (!Number.isSafeInteger(id) || id < 0) {
      throw new Error(`reset coordinator ${what}: logic id ${String(id)} is not a non-negative integer`);
    }
  }
}
