// What a rendered egress NetworkPolicy lets a Pod reach, evaluated as the API documents it: the
// rules are alternatives; a rule admits a connection when one of its peers holds the address (an
// ipBlock's cidr, less its except ranges) and one of its ports is the port. Pure: a test asks "may
// the renderer open 169.254.169.254:80?" of the manifests, with no cluster and no traffic.
import type { KubeObject } from '../support/index.ts';

interface Peer {
  ipBlock?: { cidr: string; except?: string[] };
  namespaceSelector?: { matchLabels?: Record<string, string> };
}
interface Rule {
  to?: Peer[];
  ports?: Array<{ protocol?: string; port?: number }>;
}

/** An address as a number and its width (32 or 128 bits). */
function address(ip: string): { value: bigint; bits: number } {
  if (ip.includes(':')) {
    const [head = '', tail = ''] = ip.split('::');
    const h = head === '' ? [] : head.split(':');
    const t = tail === '' ? [] : tail.split(':');
    const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
    return { value: groups.reduce((n, g) => (n << 16n) + BigInt(parseInt(g, 16)), 0n), bits: 128 };
  }
  return { value: ip.split('.').reduce((n, o) => (n << 8n) + BigInt(Number(o)), 0n), bits: 32 };
}

export function inCidr(ip: string, cidr: string): boolean {
  const [net = '', len = ''] = cidr.split('/');
  const a = address(ip);
  const n = address(net);
  if (a.bits !== n.bits) return false;
  const shift = BigInt(a.bits - Number(len));
  return a.value >> shift === n.value >> shift;
}

/** Whether the policy lets its Pods open a TCP connection to `ip:port` (DNS peers by namespace are not addresses). */
export function egressAdmits(policy: KubeObject, ip: string, port: number): boolean {
  const rules = ((policy['spec'] as { egress?: Rule[] }).egress ?? []) as Rule[];
  return rules.some(
    (r) =>
      (r.ports ?? []).some((p) => (p.protocol ?? 'TCP') === 'TCP' && p.port === port) &&
      (r.to ?? []).some(
        (peer) =>
          peer.ipBlock !== undefined &&
          inCidr(ip, peer.ipBlock.cidr) &&
          !(peer.ipBlock.except ?? []).some((e) => inCidr(ip, e)),
      ),
  );
}
