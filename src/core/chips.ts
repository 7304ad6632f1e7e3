/**
 * Chips as every layer knows them: the chip kinds (spec device-plugin.md B.2) and their detection, run modes, which
 * kinds have a parameter plane or fault subscription (B.5), the node-wide facts read at start, and the synthetic
 * card-drop code (D.5). Their names are in `device-names.ts`. Pure.
 */

/** Chip kinds of spec B.2. */
export type ChipKind =
  'Ascend910' | 'Ascend910B' | 'Ascend910A3' | 'Ascend910A5' | 'Ascend310P' | 'Ascend310' | 'Ascend310B';

/** Run mode (plugin family, B.2): the prefix of device names in the device-info ConfigMap (spec G.2, H.5). */
export type RunMode = 'Ascend910' | 'Ascend310P' | 'Ascend310';

/** Node-wide facts the kubelet layer needs (topology, default device nodes). */
export interface NodeFacts {
  readonly chipKind: ChipKind;
  /** DCMI board id of logic id 0 (spec J.3); 0 when unknown. */
  readonly boardId: number;
  /** 910A3: card id → card id of its brother card (`dcmi_get_netdev_brother_device`, spec J.3). */
  readonly brotherCards?: Readonly<Record<number, number>>;
  /** Product type strings from DCMI (spec A.2 step 4.6), e.g. `Atlas 200I SoC A1`. */
  readonly productTypes?: readonly string[];
}

/** D.5 (dcmi-abi.md §5.5): the synthetic card-drop code, appended to a chip's codes when its health returns -8012. */
export const CARD_DROP_CODE = 0x40f84e00;

/** B.2 rule 1: these board ids are Ascend910A3 whatever the chip name says. */
export const A3_BOARD_IDS: ReadonlySet<number> = new Set([0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0x81, 0x83, 0xd1, 0xd3]);

/** B.2: the chip kind from the first valid chip name and board id; undefined = unsupported (fatal at start). */
export function detectChipKind(chipName: string, boardId: number): ChipKind | undefined {
  if (A3_BOARD_IDS.has(boardId)) return 'Ascend910A3';
  if (chipName.startsWith('Ascend950') && chipName.length <= 32) return 'Ascend910A5';
  if (/^(310P\d?|I2\d?)/.test(chipName)) return 'Ascend310P';
  if (chipName.includes('310B')) return 'Ascend310B';
  if (chipName.includes('310')) return 'Ascend310';
  if (/^(910B\d|A2G\d)/.test(chipName)) return 'Ascend910B';
  if (/^910/.test(chipName)) return 'Ascend910';
  return undefined;
}

/** B.2 run mode (plugin family). */
export function runModeOf(kind: ChipKind): RunMode {
  if (kind === 'Ascend310' || kind === 'Ascend310B') return 'Ascend310';
  if (kind === 'Ascend310P') return 'Ascend310P';
  return 'Ascend910';
}

/** B.5/D.3: 310, 310B and 310P never subscribe to fault events (always polling). */
export function subscribesToFaults(kind: ChipKind): boolean {
  return runModeOf(kind) === 'Ascend910';
}

/**
 * B.5/D.5: RoCE parameter plane (hccn link status). A5's UBoE plane is handled apart, on UBoE main boards only
 * (src/health/a5-planes.ts).
 */
export function hasParameterPlane(kind: ChipKind): boolean {
  return kind === 'Ascend910' || kind === 'Ascend910B' || kind === 'Ascend910A3';
}

/** Ascend910A5 node facts read at start (spec B.7, I.2, L.8). */
export interface A5Facts {
  /** Rack id (`chassis_id` of `dcmi_spod_info`); -2 when no chip answered. */
  readonly rackId: number;
  /** Super-pod type: 0 server, 1 1D pod, 2 2D pod, 3 16P server, 4 32P server; 0 when no chip answered. */
  readonly superPodType: number;
  /** Super-pod size (`scale_type`); -2 when no chip answered. */
  readonly superPodSize: number;
  /** Whether any chip answered the super-pod query. */
  readonly answered: boolean;
  /** `300I-A5` / `300I-A5-4p` on the 300I cards (the `cardType` node annotation); absent elsewhere. */
  readonly cardType?: string;
}

/** A5 super-pod types (upstream `ProductType*`). */
export const A5_SUPER_POD_TYPE = Object.freeze({ server: 0, pod1D: 1, pod2D: 2, server16P: 3, server32P: 4 });

/** Spec H.3, I.2: the rack id is published (ConfigMap `RackID`, node annotation `rackID`) in the 1D/2D pods only. */
export function a5PublishesRackId(a5: Pick<A5Facts, 'superPodType'>): boolean {
  return a5.superPodType === A5_SUPER_POD_TYPE.pod1D || a5.superPodType === A5_SUPER_POD_TYPE.pod2D;
}

/** Board ids of the A5 300I cards and the main boards that tell the 1P card from the 4P card (upstream). */
export const A5_300I_BOARD_IDS: ReadonlySet<number> = new Set([0x1a, 0x1b]);
export const A5_300I_MAIN_BOARDS: Readonly<Record<number, string>> = Object.freeze({
  0x68: '300I-A5',
  0x6c: '300I-A5-4p',
});

/** The A5 card type: `300I-A5` or `300I-A5-4p` on a 300I board with a known main board, else undefined. */
export function a5CardTypeOf(boardId: number, mainboardId: number | undefined): string | undefined {
  if (!A5_300I_BOARD_IDS.has(boardId) || mainboardId === undefined) return undefined;
  return Object.hasOwn(A5_300I_MAIN_BOARDS, mainboardId) ? A5_300I_MAIN_BOARDS[mainboardId] : undefined;
}
