/**
 * The {@link ResetDcmi} port over the typed DCMI binding: the reset engines address chips by logic id, DCMI by
 * (card, device). Reset, boot status, out-of-band and network health run on the thread pool (dcmi-abi.md §4.7, §4.9);
 * the short queries are synchronous calls wrapped in promises so that both kinds fail the same way (a rejected
 * promise carrying the DCMI `code`).
 */
import { ResetChannel, type Dcmi } from '../dcmi/dcmi.js';
import type { ResetChip, ResetDcmi } from './types.js';

type ResetCalls = Pick<
  Dcmi,
  | 'setDeviceReset'
  | 'getDeviceBootStatus'
  | 'getProcesses'
  | 'getDeviceNetworkHealth'
  | 'getDeviceHealth'
  | 'getDeviceAllErrorCodes'
  | 'getOutbandChannelState'
  | 'preResetSoc'
  | 'rescanSoc'
>;

/** Builds the port for the node's chips; an unknown logic id rejects with an error naming it. */
export function resetDcmiOf(dcmi: ResetCalls, chips: readonly ResetChip[]): ResetDcmi {
  const byLogic = new Map(chips.map((c) => [c.logicId, c]));
  const at = (logicId: number): ResetChip => {
    const c = byLogic.get(logicId);
    if (!c) throw new RangeError(`reset: logic id ${logicId} is not a chip of this node`);
    return c;
  };
  const run = async <T>(logicId: number, f: (c: ResetChip) => T | Promise<T>): Promise<T> => f(at(logicId));
  return {
    setDeviceReset: (id, channel) =>
      run(id, (c) =>
        dcmi.setDeviceReset(c.cardId, c.deviceId, channel === 'inband' ? ResetChannel.INBAND : ResetChannel.OUTBAND),
      ),
    getBootStatus: (id) => run(id, (c) => dcmi.getDeviceBootStatus(c.cardId, c.deviceId)),
    getProcessCount: (id) => run(id, (c) => dcmi.getProcesses(c.cardId, c.deviceId).length),
    getNetworkHealth: (id) => run(id, (c) => dcmi.getDeviceNetworkHealth(c.cardId, c.deviceId)),
    getDeviceHealth: (id) => run(id, (c) => dcmi.getDeviceHealth(c.cardId, c.deviceId)),
    getErrorCodes: (id) => run(id, (c) => dcmi.getDeviceAllErrorCodes(c.cardId, c.deviceId).codes),
    getOutbandChannelState: (id) => run(id, (c) => dcmi.getOutbandChannelState(c.cardId, c.deviceId)),
    preResetSoc: (id) => run(id, (c) => dcmi.preResetSoc(c.cardId, c.deviceId)),
    rescanSoc: (id) => run(id, (c) => dcmi.rescanSoc(c.cardId, c.deviceId)),
  };
}
