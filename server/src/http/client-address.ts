import { isIP } from 'node:net';
import type { Request } from 'express';
import { z } from 'zod';

const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function isAddressOrRange(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address = '', bits, ...rest] = entry.split('/');
  if (rest.length > 0 || isIP(address) === 0) return false;
  return bits === undefined || /^\d{1,3}$/.test(bits) || isIP(bits) === 4;
}

/**
 * Which proxies may name the client in `X-Forwarded-For`, as Express's `trust proxy` takes it: empty
 * (none: the client is the connection's address, and a header the caller writes is ignored), a number
 * of hops (1: the last entry, the one the one proxy in front wrote; only sound when nothing reaches the
 * server around that proxy), or a comma list of proxy addresses, CIDRs and Express's named ranges.
 */
export function trustProxySchema(variable: string) {
  return z
    .string()
    .trim()
    .default('')
    .transform((value, ctx): false | number | string[] => {
      if (value === '') return false;
      if (/^\d+$/.test(value)) return Number(value);
      const list = value.split(',').map((entry) => entry.trim());
      if (list.every(isAddressOrRange)) return list;
      ctx.addIssue({
        code: 'custom',
        message: `${variable} must be a number of hops or a comma list of addresses, CIDRs, loopback, linklocal or uniquelocal`,
      });
      return z.NEVER;
    });
}
export type TrustProxy = z.output<ReturnType<typeof trustProxySchema>>;

/**
 * The client a request counts against in per-client caps: the address Express determined (`req.ip`,
 * following `trust proxy`). An IPv4-mapped address is its IPv4 address; an IPv6 address counts by its
 * /64, which one host usually holds whole: per address, it could open a stream from each of 2^64.
 */
export function clientKey(req: Request): string {
  const address = (req.ip ?? req.socket.remoteAddress ?? 'unknown').replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  return isIP(address) === 6 ? `${ipv6Prefix64(address)}::/64` : address;
}

/** The first four groups of an IPv6 address, `::` expanded (a dotted IPv4 tail is two groups). */
function ipv6Prefix64(address: string): string {
  const groups = (part: string | undefined) =>
    part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : [];
  const [head, tail] = address.split('::');
  const front = groups(head);
  const all =
    tail === undefined
      ? front
      : [...front, ...Array<string>(8 - front.length - groups(tail).length).fill('0'), ...groups(tail)];
  return all
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':');
}
