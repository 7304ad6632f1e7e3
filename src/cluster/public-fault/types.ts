/**
 * The public-fault message (spec cluster-faults.md §2.1 "Message schema"), as both entry points deliver it after
 * decoding: the ConfigMap path through the Go-semantics decoder (`message-decode.ts`), the gRPC path from the proto
 * (`PublicFaultRequest`). Missing fields are already their zero values, like Go and proto3.
 */

/** One influence: the node (by name, else by serial number) and the NPUs hit. */
export interface PublicFaultInfluence {
  nodeName: string;
  nodeSN: string;
  deviceIds: number[];
}

/** One fault of a message. Times are Unix ms. */
export interface PublicFault {
  faultId: string;
  faultType: string;
  faultCode: string;
  faultTime: number;
  assertion: string;
  /** null when absent (Go nil map) */
  faultLocation: Record<string, string> | null;
  influence: PublicFaultInfluence[];
  description: string;
}

/** A whole message (one ConfigMap `PublicFault` value or one `SendPublicFault` request). `timestamp` is Unix ms. */
export interface PublicFaultMessage {
  id: string;
  timestamp: number;
  version: string;
  resource: string;
  faults: PublicFault[];
  /**
   * Set only when the sender sent more faults than §2.5 allows (100): how many it sent. The faults were then not
   * decoded (`faults` is empty) and validation refuses the message with "invalid faults length".
   */
  faultsSent?: number;
}

/** Where a message came from (metrics and logs). */
export type PublicFaultSource = 'grpc' | 'configmap';

/** The assertions of §2.5. */
export type Assertion = 'occur' | 'recover' | 'once';

/** Levels a public fault can have (§2.3). */
export type PublicFaultLevel = 'SeparateNPU' | 'PreSeparateNPU' | 'SubHealthFault' | 'NotHandleFault';

/**
 * One cached entry (§2.8): one per (fault × influence), keyed by the influence's node and `resource + faultId`.
 * Times are Unix **seconds**.
 */
export interface PublicFaultRecord {
  /** the sender; kept as such (upstream re-derives it from the key, see docs/public-faults.md) */
  readonly resource: string;
  readonly faultId: string;
  readonly faultType: string;
  readonly faultCode: string;
  readonly level: PublicFaultLevel;
  readonly devIds: readonly number[];
  /** s: floor(faultTime ms / 1000) */
  readonly faultTime: number;
  /** always `occur` once stored (§2.7) */
  readonly assertion: 'occur';
  /** s of the monotonic clock: when the entry was inserted (an interval's start, never published) */
  readonly addTime: number;
}
