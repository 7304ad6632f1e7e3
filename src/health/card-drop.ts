/**
 * Card drop (spec D.5, only while subscribed): `dcmi_get_device_health` answering -8012 (device not ready) means the
 * card dropped off the bus; an occurrence of 0x40F84E00 is synthesised once, and its recovery once the answer goes
 * away. In polling mode the DCMI face adds 0x40F84E00 to the chip's code list itself, so the ordinary diff sees it.
 *
 * Kept beside the compensation that asks it (each compensation run checks every chip first): the dropped set is
 * what the run's diff, and the periodic reconcile's confirming read, must leave 0x40F84E00 to.
 */
import type { ChipAddress } from '../dcmi/dcmi.js';
import { DcmiCode } from '../dcmi/errors.js';
import { dcmiErrorCode } from './types.js';

/** The outcome of one check. */
export type CardDropCheck =
  /** DCMI failed with another error: nothing is known (the diff then treats 0x40F84E00 like any code). */
  | { readonly answered: false }
  /** DCMI answered; `synthesize` is the event of 0x40F84E00 to send, if the drop state changed. */
  | { readonly answered: true; readonly synthesize?: 'occur' | 'recover' };

export interface CardDropOptions {
  readonly getDeviceHealth: (cardId: number, deviceId: number) => number;
  /** A DCMI error other than -8012 (counted and logged by the owner). */
  readonly dcmiError: (err: unknown, fn: string) => void;
}

/** Which chips dropped, from `dcmi_get_device_health`. */
export class CardDrop {
  readonly #o: CardDropOptions;
  /** Chips whose drop occurrence was synthesised (and not yet its recovery). */
  readonly #dropped = new Set<number>();

  constructor(options: CardDropOptions) {
    this.#o = options;
  }

  /** True while the chip's drop occurrence stands. */
  isDropped(logicId: number): boolean {
    return this.#dropped.has(logicId);
  }

  /**
   * Asks DCMI about the chip. `storeHas`: the store lists 0x40F84E00 for it (an event is synthesised only when the
   * store disagrees, so a restart with the code already stored sends nothing twice).
   */
  check(chip: ChipAddress, storeHas: boolean): CardDropCheck {
    let dropped: boolean;
    try {
      this.#o.getDeviceHealth(chip.cardId, chip.deviceId);
      dropped = false;
    } catch (err) {
      if (dcmiErrorCode(err) !== DcmiCode.NOT_READY) {
        this.#o.dcmiError(err, 'dcmi_get_device_health');
        return { answered: false };
      }
      dropped = true;
    }
    if (dropped && !this.#dropped.has(chip.logicId)) {
      this.#dropped.add(chip.logicId);
      if (!storeHas) return { answered: true, synthesize: 'occur' };
    } else if (!dropped && this.#dropped.has(chip.logicId)) {
      this.#dropped.delete(chip.logicId);
      if (storeHas) return { answered: true, synthesize: 'recover' };
    }
    return { answered: true };
  }
}
