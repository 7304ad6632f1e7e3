/**
 * The Events the agent creates, as pure builders (spec K.1, K.2, plus ours for escalations, separations, operator
 * releases and rejected input). Names and messages of K.1/K.2 are upstream's; ours are listed in docs/kube.md.
 */
import type { Transition, UpgradeReason } from '../faults/index.js';
import type { AgentEvent } from './event-recorder.js';
import { localTimeText } from './event-recorder.js';
import { goMap, goSlice, goStruct, marshalGo, type GoValue } from '../core/go-json.js';
import { boundedText } from '../core/text.js';

/** A fault event as the health layer took it in a cycle (spec K.1). */
export interface FaultEventInfo {
  readonly logicId: number;
  readonly cardId: number;
  readonly deviceId: number;
  /** Upper-case hex text. */
  readonly code: string;
  readonly assertion: 'occur' | 'recover' | 'once';
  /** Code-only level (GetFaultTypeByCode, network variant for parameter-plane codes): the Event's action. */
  readonly level: string;
  /** A5 writes `logicID:<id>` instead of cardID/deviceID. */
  readonly a5?: boolean;
}

const ASSERTION_TEXT = { occur: 'Occur', recover: 'Recovery', once: 'Notice' } as const;

/** spec K.1: the Event of one fault event, created at `nowMs`. */
export function faultEvent(nodeName: string, e: FaultEventInfo, nowMs: number): AgentEvent {
  const what = ASSERTION_TEXT[e.assertion];
  const ids = e.a5 === true ? `logicID:${e.logicId}` : `cardID:${e.cardId}, deviceID:${e.deviceId}`;
  return {
    type: e.assertion === 'occur' ? 'Warning' : 'Normal',
    reason: what,
    action: e.level,
    nameSuffix: `${nowMs}${e.logicId}`,
    message:
      `device fault, nodeName:${nodeName}, assertion:${what}, ${ids}, faultCodes:${e.code}, ` +
      `faultLevelName:${e.level}, alarmRaisedTime:${localTimeText(nowMs)}`,
    brief: `${what} logic ${e.logicId} ${e.code}`,
  };
}

/** spec K.2: removed reasons by device name, in the G.5 format. */
export function releaseUpgradeFaultEvent(
  removed: ReadonlyMap<string, readonly UpgradeReason[]>,
  nowMs: number,
): AgentEvent {
  const map = new Map<string, GoValue>();
  for (const [name, reasons] of removed) {
    map.set(
      name,
      goSlice(
        reasons.map((r) =>
          goStruct([
            ['upgrade_time', r.upgrade_time],
            ['fault_code', r.fault_code],
            ['fault_level', r.fault_level],
            ['upgrade_type', r.upgrade_type],
          ]),
        ),
      ),
    );
  }
  return {
    type: 'Normal',
    reason: 'EventReleaseUpgradeFault',
    nameSuffix: `EventReleaseUpgradeFault.${nowMs}`,
    message: marshalGo(goMap(map)),
    brief: `EventReleaseUpgradeFault ${[...removed.keys()].join(',')}`,
  };
}

/**
 * Our Events for engine transitions (beyond upstream): escalations, separations and their refusal, releases other
 * than by an operator (the operator case is reported by the device-info publisher, which knows the ConfigMap).
 */
export function transitionEvents(
  transitions: readonly Transition[],
  nameOf: (logicId: number) => string,
): AgentEvent[] {
  const out: AgentEvent[] = [];
  for (const t of transitions) {
    const chip = (): string => `${nameOf(t.logicId)} (logic id ${t.logicId})`;
    switch (t.kind) {
      case 'escalated':
        out.push({
          type: 'Warning',
          reason: 'FaultEscalated',
          message: `${chip()}: fault ${t.code} escalated to ${t.level} by ${t.upgradeType}`,
          brief: `FaultEscalated ${nameOf(t.logicId)} ${t.code}`,
        });
        break;
      case 'separated':
        out.push({
          type: 'Warning',
          reason: 'ManuallySeparated',
          message:
            `${chip()} is manually separated (${t.by === 'startup' ? 'listed in ManuallySeparateNPU at start' : `fault ${t.code ?? ''} reached its FaultFrequency threshold`}); ` +
            'delete its name from ManuallySeparateNPU of the device-info ConfigMap to release it',
          brief: `ManuallySeparated ${nameOf(t.logicId)}`,
        });
        break;
      case 'separation-refused':
        out.push({
          type: 'Warning',
          reason: 'SeparationRefused',
          message: `${chip()} cannot be manually separated: ${t.reason}`,
          brief: `SeparationRefused ${nameOf(t.logicId)}`,
        });
        break;
      case 'released':
        if (t.by !== 'operator')
          out.push({
            type: 'Normal',
            reason: 'ManualSeparationReleased',
            message: `${chip()} left manual separation (${t.by})`,
            brief: `ManualSeparationReleased ${nameOf(t.logicId)}`,
          });
        break;
      default:
        break;
    }
  }
  return out;
}

/**
 * Largest Event message we create (UTF-8 bytes): the `note` limit of `events.k8s.io/v1` (1 KiB), which is also far
 * below anything the core API refuses, so no Event is lost to its size.
 */
export const MAX_EVENT_MESSAGE_BYTES = 1024;
/** Characters of a refused value quoted in its Event. */
const SHOWN_VALUE_CHARS = 120;

/**
 * An Event for input the agent refused (a hand-edited ConfigMap key, a bad fault configuration): the value is
 * quoted up to {@link SHOWN_VALUE_CHARS} characters and the whole message kept within
 * {@link MAX_EVENT_MESSAGE_BYTES}, whatever the size of the value and of the reasons.
 */
export function rejectedInputEvent(reason: string, what: string, key: string, value: string, why: string): AgentEvent {
  const shown =
    value.length > SHOWN_VALUE_CHARS ? `${value.slice(0, SHOWN_VALUE_CHARS)}…(${value.length} chars)` : value;
  return {
    type: 'Warning',
    reason,
    message: boundedText(`${what}: key ${key} = ${JSON.stringify(shown)} not used: ${why}`, MAX_EVENT_MESSAGE_BYTES),
    brief: `${reason} ${key}`,
  };
}
