/**
 * Node facts read once from DCMI at start (spec A.2 step 4.3–4.6, B.2, J.3): chip kind from the first valid chip
 * info and board info, product types, A3 brother cards. Throws {@link DiscoveryError} when the node cannot be
 * served (no chip info, no board info, unsupported kind): start-up fails with exit status 3.
 */
import type { ChipAddress, Dcmi } from '../dcmi/dcmi.js';
import { type ChipKind, type NodeFacts, detectChipKind } from '../core/chips.js';

export class DiscoveryError extends Error {
  override readonly name = 'DiscoveryError';
}

/** The DCMI calls discovery needs. */
export type DiscoveryDcmi = Pick<Dcmi, 'getChipInfo' | 'getBoardInfo' | 'getProductType' | 'getBrotherCardId'>;

export interface Discovery {
  readonly facts: NodeFacts;
  readonly chipName: string;
  /** Problems that did not stop start-up (they are logged as warnings). */
  readonly warnings: readonly string[];
}

function firstAnswer<T>(chips: readonly ChipAddress[], read: (c: ChipAddress) => T): T | undefined {
  for (const c of chips) {
    try {
      return read(c);
    } catch {
      // next chip
    }
  }
  return undefined;
}

export function discoverNode(dcmi: DiscoveryDcmi, chips: readonly ChipAddress[]): Discovery {
  const warnings: string[] = [];
  const info = firstAnswer(chips, (c) => dcmi.getChipInfo(c.cardId, c.deviceId));
  if (!info) throw new DiscoveryError('no chip answered dcmi_get_device_chip_info with a valid chip info');
  const board = firstAnswer(chips, (c) => dcmi.getBoardInfo(c.cardId, c.deviceId));
  if (!board) throw new DiscoveryError('no chip answered dcmi_get_device_board_info with a valid board info');
  const kind: ChipKind | undefined = detectChipKind(info.chipName, board.boardId);
  if (!kind) {
    throw new DiscoveryError(
      `unsupported chip "${info.chipName}" (board id 0x${board.boardId.toString(16)}); spec B.2 knows 910, 910B, ` +
        '910A3, 910A5, 310, 310B and 310P',
    );
  }
  const productTypes: string[] = [];
  const cards = [...new Set(chips.map((c) => c.cardId))];
  for (const card of cards) {
    const pt = firstAnswer(
      chips.filter((c) => c.cardId === card),
      (c) => dcmi.getProductType(c.cardId, c.deviceId),
    );
    if (pt && !productTypes.includes(pt)) productTypes.push(pt);
  }
  let brotherCards: Record<number, number> | undefined;
  if (kind === 'Ascend910A3') {
    brotherCards = {};
    for (const card of cards) {
      try {
        brotherCards[card] = dcmi.getBrotherCardId(card, 0);
      } catch (err) {
        warnings.push(`card ${card}: no brother card (${(err as Error).message})`);
      }
    }
  }
  return {
    facts: {
      chipKind: kind,
      boardId: board.boardId,
      ...(brotherCards ? { brotherCards } : {}),
      ...(productTypes.length > 0 ? { productTypes } : {}),
    },
    chipName: info.chipName,
    warnings,
  };
}
