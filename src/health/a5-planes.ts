/**
 * A5 plane facts the wiring needs (spec B.5 table: "UBoE only on main boards 0x23/0x25/0x27"): whether the node's
 * parameter plane is the UBoE bonding ports, from `dcmi_get_mainboard_id` of the first chip. A main board id that
 * cannot be read means no UBoE plane (one warning): the hyper plane is checked on every A5 node regardless.
 */
import type { ChipAddress } from '../dcmi/dcmi.js';
import type { Logger } from '../core/logger.js';

/** B.5: the A5 main boards with a UBoE parameter plane. */
export const UBOE_MAIN_BOARDS: ReadonlySet<number> = new Set([0x23, 0x25, 0x27]);

/** True when the node's main board (of the first chip) has the UBoE parameter plane. */
export function uboeMainBoard(
  dcmi: { getMainboardId(cardId: number, deviceId: number): number },
  chips: readonly ChipAddress[],
  log: Logger,
): boolean {
  const first = chips[0];
  if (!first) return false;
  try {
    const id = dcmi.getMainboardId(first.cardId, first.deviceId);
    const on = UBOE_MAIN_BOARDS.has(id);
    log.info(
      { mainboardId: `0x${id.toString(16)}`, uboe: on },
      on ? 'A5 UBoE parameter plane is checked (D.5, D.8)' : 'A5 main board without UBoE: no parameter-plane check',
    );
    return on;
  } catch (err) {
    log.warn({ err }, 'A5 main board id unreadable: no UBoE parameter-plane check (B.5)');
    return false;
  }
}
