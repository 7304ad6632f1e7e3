/**
 * Fault level names and their severity order (spec E.2).
 *
 * Levels are compared by their index in {@link LEVELS_BY_SEVERITY}; a larger rank is more severe.
 */

/** Every level name a chip can have, least severe first. `NormalNPU` means "no fault". */
export const LEVELS_BY_SEVERITY = [
  'NormalNPU',
  'NotHandleFault',
  'SubHealthFault',
  'RestartRequest',
  'RestartBusiness',
  'FreeRestartNPU',
  'RestartNPU',
  'PreSeparateNPU',
  'SeparateNPU',
  'ManuallySeparateNPU',
] as const;

/** A fault level name (spec E.2). */
export type FaultLevel = (typeof LEVELS_BY_SEVERITY)[number];

/** Numeric rank of a level: 0 = NormalNPU … 9 = ManuallySeparateNPU. */
export type LevelRank = number;

const RANK: ReadonlyMap<string, LevelRank> = new Map(LEVELS_BY_SEVERITY.map((l, i) => [l, i]));

/** Rank of the empty level (no fault). */
export const NORMAL_RANK: LevelRank = 0;

/** True when `name` is a level name (exact spelling, case-sensitive as upstream compares strings). */
export function isFaultLevel(name: unknown): name is FaultLevel {
  return typeof name === 'string' && RANK.has(name);
}

/** Rank of a level name; throws on an unknown name (callers validate first). */
export function rankOf(level: FaultLevel): LevelRank {
  return RANK.get(level)!;
}

/** Level name of a rank. */
export function levelOf(rank: LevelRank): FaultLevel {
  return LEVELS_BY_SEVERITY[rank] ?? 'NormalNPU';
}

/** Most severe of some levels (spec E.2); `NormalNPU` for none. */
export function mostSevere(levels: Iterable<FaultLevel>): FaultLevel {
  let best = NORMAL_RANK;
  for (const l of levels) best = Math.max(best, rankOf(l));
  return levelOf(best);
}

/** Levels a FaultFrequency rule may escalate to (spec F.3). */
export const FREQUENCY_HANDLING: ReadonlySet<FaultLevel> = new Set<FaultLevel>([
  'NotHandleFault',
  'RestartRequest',
  'RestartBusiness',
  'FreeRestartNPU',
  'RestartNPU',
  'PreSeparateNPU',
  'SeparateNPU',
  'ManuallySeparateNPU',
  'SubHealthFault',
]);

/** Levels a FaultDuration rule may escalate to: the FaultFrequency set without ManuallySeparateNPU (spec F.4). */
export const DURATION_HANDLING: ReadonlySet<FaultLevel> = new Set<FaultLevel>(
  [...FREQUENCY_HANDLING].filter((l) => l !== 'ManuallySeparateNPU'),
);

/** Reset-policy vocabulary of a level (spec E.2), used by the reset engine and the reset ConfigMaps. */
export function resetPolicyOf(level: FaultLevel): { name: string; value: number } {
  switch (level) {
    case 'RestartRequest':
      return { name: 'restart_request', value: 2 };
    case 'RestartBusiness':
      return { name: 'restart', value: 3 };
    case 'FreeRestartNPU':
      return { name: 'free_reset', value: 4 };
    case 'RestartNPU':
      return { name: 'reset', value: 5 };
    case 'PreSeparateNPU':
    case 'SeparateNPU':
    case 'ManuallySeparateNPU':
      return { name: 'isolate', value: 6 };
    default:
      return { name: 'empty', value: 0 };
  }
}
