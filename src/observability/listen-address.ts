/**
 * The one listen-address rule of both programs' HTTP servers (`-metricsAddress` of the agent and of the fault
 * center, architecture §4): Go's `host:port` shape (`net.SplitHostPort`) with a numeric port.
 *
 * - `:port`: every interface; `host:port` with an IPv4 address or a host name (letters, digits, `.`, `-`, `_`);
 *   `[ip]:port` with an IPv6 address (a zone such as `%eth0` allowed) or an IPv4 address in brackets.
 * - The port is 1 to 5 decimal digits, 0..65535; 0 asks for any free port.
 * - Refused, each with the reason: no `:port` (a bare `9464`), an unbracketed IPv6 address (`::1:9464` is
 *   ambiguous; write `[::1]:9464`), a bracketed text that is no IP address, a host with any other character
 *   (spaces included), an empty, signed, hexadecimal or out-of-range port, more than {@link MAX_LISTEN_ADDRESS_CHARS}
 *   characters. `""` (the server off) is the callers' business, not an address.
 */
import net from 'node:net';

/** The rule in words, for flag errors and help texts. */
export const LISTEN_ADDRESS_RULE = '[host]:port with a port in [0, 65535]';

/** Longest address read: a 253-character host name, brackets, `:` and a 5-digit port fit. */
export const MAX_LISTEN_ADDRESS_CHARS = 300;

/** A parsed listen address. */
export interface ListenAddress {
  /** `""` = every interface; otherwise an IP address (without brackets) or a host name. */
  readonly host: string;
  /** 0..65535; 0 = any free port. */
  readonly port: number;
}

/** A malformed listen address; the message names the address and what is wrong with it. */
export class ListenAddressError extends Error {
  override readonly name = 'ListenAddressError';
  constructor(
    readonly address: string,
    /** What is wrong, without the address (for flag errors that name the flag and value already). */
    readonly reason: string,
  ) {
    super(`bad listen address "${address.slice(0, MAX_LISTEN_ADDRESS_CHARS)}": ${reason} (${LISTEN_ADDRESS_RULE})`);
  }
}

const HOST_NAME = /^[A-Za-z0-9._-]+$/;

/** What is wrong with `address`, or undefined when it follows the rule. */
export function listenAddressProblem(address: string): string | undefined {
  const r = read(address);
  return typeof r === 'string' ? r : undefined;
}

/** Parses `address`; throws {@link ListenAddressError} naming what is wrong. */
export function listenAddress(address: string): ListenAddress {
  const r = read(address);
  if (typeof r === 'string') throw new ListenAddressError(address, r);
  return r;
}

/** Parses `address`; undefined when malformed ({@link listenAddressProblem} says why). */
export function parseListenAddress(address: string): ListenAddress | undefined {
  const r = read(address);
  return typeof r === 'string' ? undefined : r;
}

/** The address, or the reason it is refused. */
function read(address: string): ListenAddress | string {
  if (address.length > MAX_LISTEN_ADDRESS_CHARS) {
    return `${address.length} characters, over the limit of ${MAX_LISTEN_ADDRESS_CHARS}`;
  }
  if (address === '') return 'empty';
  let host: string;
  let portText: string;
  if (address.startsWith('[')) {
    const close = address.indexOf(']');
    if (close < 0) return 'a "[" without its "]"';
    if (address[close + 1] !== ':') return 'no ":port" after the "]"';
    const ip = address.slice(1, close);
    if (net.isIP(ip) === 0) return `"${ip}" in brackets is not an IP address`;
    host = ip;
    portText = address.slice(close + 2);
  } else {
    const colon = address.lastIndexOf(':');
    if (colon < 0) {
      return /^\d+$/.test(address) ? `no host part: a port alone is written ":${address}"` : 'no ":port"';
    }
    host = address.slice(0, colon);
    portText = address.slice(colon + 1);
    if (host.includes(':')) {
      const example = net.isIP(host) === 6 ? `[${host}]:${portText}` : '[::1]:9464';
      return `an IPv6 address must be in brackets, e.g. ${example}`;
    }
    if (host !== '' && !HOST_NAME.test(host)) {
      return `host "${host}" has a character other than a letter, a digit, ".", "-" or "_"`;
    }
  }
  if (portText === '') return 'no port after the ":"';
  if (!/^\d{1,5}$/.test(portText)) return `port "${portText.slice(0, 16)}" is not a decimal number of 1 to 5 digits`;
  const port = Number(portText);
  if (port > 65535) return `port ${port} is over 65535`;
  return { host, port };
}
