// Argo CD's cache encoding, pure (util/cache/cache.go, util/cache/redis.go, util/cache/appstate):
// the key of each value (`<ARGOCD_REDIS_KEY_PREFIX><key>|<cache version>`, `.gz` appended when
// compressed), the value as Go's encoding/json writes it (struct fields in declaration order,
// empty `omitempty` fields left out, map keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped, a
// newline after the value, as json.Encoder ends it), gzip-compressed or not, and the resource tree
// split into shards as ApplicationTree.GetShards splits it. A reader decoding as Argo CD decodes
// (gunzip, then json.Decoder) gets exactly what Argo CD's controller would have written.
import { gunzipSync, gzipSync } from 'node:zlib';
import type {
  ApplicationTree,
  ClusterInfo,
  InfoItem,
  ResourceDiff,
  ResourceNetworkingInfo,
  ResourceNode,
  ResourceRef,
} from './types.ts';

/** common.CacheVersion of Argo CD v3.6.1: the suffix of every key. */
export const CACHE_VERSION = '1.8.3';

export type Compression = 'gzip' | 'none';

export function isCompression(s: string): s is Compression {
  return s === 'gzip' || s === 'none';
}

export const appManagedResourcesKey = (app: string): string => `app|managed-resources|${app}`;
export const appResourcesTreeKey = (app: string, shard = 0): string =>
  shard > 0 ? `app|resources-tree|${app}|${shard}` : `app|resources-tree|${app}`;
export const clusterInfoKey = (server: string): string => `cluster|info|${server}`;

/** Cache.generateFullKey: the key with the cache version. */
export function fullKey(key: string): string {
  return `${key}|${CACHE_VERSION}`;
}

/** redisCache.getKey: the Redis key of a cache key. */
export function redisKey(key: string, opts: { prefix: string; compression: Compression }): string {
  const k = opts.prefix + fullKey(key);
  return opts.compression === 'gzip' ? `${k}.gz` : k;
}

/**
 * The channel argocd-server subscribes to for an Application's tree (OnAppResourcesTreeChanged):
 * the managed-resources key with its version, with neither the prefix nor `.gz` (NotifyUpdated
 * publishes on the full key as given, not on the Redis key).
 */
export function treeUpdatedChannel(app: string): string {
  return fullKey(appManagedResourcesKey(app));
}

// --- Go's encoding/json --------------------------------------------------------------------------

/** A Go struct: fields in declaration order; each `omitempty` one left out when empty. */
export class GoStruct {
  readonly fields: ReadonlyArray<readonly [string, unknown, boolean]>;
  constructor(fields: ReadonlyArray<readonly [name: string, value: unknown, omitempty: boolean]>) {
    this.fields = fields;
  }
}

function isEmpty(v: unknown): boolean {
  if (v === undefined || v === null || v === '' || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.length === 0;
  if (v instanceof GoStruct) return false;
  if (typeof v === 'object')
    return Object.keys(v).filter((k) => (v as Record<string, unknown>)[k] !== undefined).length === 0;
  return false;
}

/** A string as Go writes it: JSON.stringify's escapes plus Go's HTML-safe ones; a lone surrogate is U+FFFD. */
export function goString(s: string): string {
  return JSON.stringify(s)
    .replace(/\\ud[89a-f][0-9a-f]{2}/g, '\\ufffd')
    .replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Byte order of Go's string comparison (UTF-8): code points, not UTF-16 units. */
function goCompare(a: string, b: string): number {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return Buffer.compare(x, y);
}

/** Go's json.Marshal of `v`: GoStruct in field order, plain objects as maps (keys sorted). */
export function goJson(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return goString(v);
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`json: unsupported value: ${v}`);
    return JSON.stringify(v);
  }
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return `[${v.map(goJson).join(',')}]`;
  if (v instanceof GoStruct) {
    const parts: string[] = [];
    for (const [name, value, omitempty] of v.fields) {
      if (omitempty && isEmpty(value)) continue;
      parts.push(`${goString(name)}:${goJson(value)}`);
    }
    return `{${parts.join(',')}}`;
  }
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort(goCompare);
    return `{${keys.map((k) => `${goString(k)}:${goJson(o[k])}`).join(',')}}`;
  }
  throw new Error(`json: unsupported type: ${typeof v}`);
}

// --- Argo CD's types as Go structs ---------------------------------------------------------------

const refFields = (r: ResourceRef): Array<readonly [string, unknown, boolean]> => [
  ['group', r.group, true],
  ['version', r.version, true],
  ['kind', r.kind, true],
  ['namespace', r.namespace, true],
  ['name', r.name, true],
  ['uid', r.uid, true],
];

const refStruct = (r: ResourceRef): GoStruct => new GoStruct(refFields(r));
const infoStruct = (i: InfoItem): GoStruct =>
  new GoStruct([
    ['name', i.name, true],
    ['value', i.value, true],
  ]);

function networkingStruct(n: ResourceNetworkingInfo): GoStruct {
  return new GoStruct([
    ['targetLabels', n.targetLabels, true],
    ['targetRefs', n.targetRefs?.map(refStruct), true],
    ['labels', n.labels, true],
    [
      'ingress',
      n.ingress?.map(
        // corev1.LoadBalancerIngress: ip, hostname, ipMode (unset), ports (unset).
        (i) =>
          new GoStruct([
            ['ip', i.ip, true],
            ['hostname', i.hostname, true],
          ]),
      ),
      true,
    ],
    ['externalURLs', n.externalURLs, true],
  ]);
}

export function nodeStruct(n: ResourceNode): GoStruct {
  return new GoStruct([
    ...refFields(n),
    ['parentRefs', n.parentRefs?.map(refStruct), true],
    ['info', n.info?.map(infoStruct), true],
    ['networkingInfo', n.networkingInfo ? networkingStruct(n.networkingInfo) : undefined, true],
    ['resourceVersion', n.resourceVersion, true],
    ['images', n.images, true],
    [
      'health',
      n.health
        ? new GoStruct([
            ['status', n.health.status, true],
            ['message', n.health.message, true],
          ])
        : undefined,
      true,
    ],
    ['createdAt', n.createdAt, true],
  ]);
}

export function treeStruct(t: ApplicationTree): GoStruct {
  return new GoStruct([
    ['nodes', t.nodes?.map(nodeStruct), true],
    ['orphanedNodes', t.orphanedNodes?.map(nodeStruct), true],
    ['hosts', t.hosts, true],
    ['shardsCount', t.shardsCount, true],
  ]);
}

export function diffStruct(d: ResourceDiff): GoStruct {
  return new GoStruct([
    ['group', d.group, true],
    ['kind', d.kind, true],
    ['namespace', d.namespace, true],
    ['name', d.name, true],
    ['targetState', d.targetState, true],
    ['liveState', d.liveState, true],
    ['diff', d.diff, true],
    ['hook', d.hook, true],
    ['normalizedLiveState', d.normalizedLiveState, true],
    ['predictedLiveState', d.predictedLiveState, true],
    ['resourceVersion', d.resourceVersion, true],
    ['modified', d.modified, true],
  ]);
}

export function clusterInfoStruct(c: ClusterInfo): GoStruct {
  return new GoStruct([
    [
      'connectionState',
      new GoStruct([
        ['status', c.connectionState.status, false],
        ['message', c.connectionState.message, false],
        ['attemptedAt', c.connectionState.attemptedAt, false],
      ]),
      true,
    ],
    ['serverVersion', c.serverVersion, true],
    [
      'cacheInfo',
      new GoStruct([
        ['resourcesCount', c.cacheInfo.resourcesCount, true],
        ['apisCount', c.cacheInfo.apisCount, true],
        ['lastCacheSyncTime', c.cacheInfo.lastCacheSyncTime, true],
      ]),
      true,
    ],
    ['applicationsCount', c.applicationsCount, false],
    ['apiVersions', c.apiVersions, true],
  ]);
}

// --- Values ------------------------------------------------------------------------------------

/** redisCache.marshal: json.Encoder's output (the value and a newline), gzip-compressed or not. */
export function marshal(value: GoStruct | unknown, compression: Compression): Buffer {
  const json = Buffer.from(goJson(value) + '\n', 'utf8');
  if (compression === 'none') return json;
  const gz = gzipSync(json);
  // Go's gzip.Writer names no operating system (255); zlib names Unix (3). Same stream otherwise.
  gz[9] = 255;
  return gz;
}

/** redisCache.unmarshal: what a reader decoding as Argo CD does gets (JSON.parse in place of json.Decoder). */
export function unmarshal(data: Buffer, compression: Compression): unknown {
  const json = compression === 'gzip' ? gunzipSync(data) : data;
  return JSON.parse(json.toString('utf8'));
}

/** Argo CD's ResourceNode.FullName / ResourceDiff.FullName: the sort key of trees and managed resources. */
export function fullName(r: { group?: string; kind?: string; namespace?: string; name?: string }): string {
  return `${r.group ?? ''}/${r.kind ?? ''}/${r.namespace ?? ''}/${r.name ?? ''}`;
}

const byFullName = <T extends { group?: string; kind?: string; namespace?: string; name?: string }>(
  a: T,
  b: T,
): number => goCompare(fullName(a), fullName(b));

/** SetAppManagedResources' order. */
export function sortManagedResources(items: ResourceDiff[]): ResourceDiff[] {
  return [...items].sort(byFullName);
}

/** ApplicationTree.Normalize then GetShards(size): shard 0 carries shardsCount when split. */
export function treeShards(tree: ApplicationTree, size: number): ApplicationTree[] {
  const t: ApplicationTree = {
    ...tree,
    ...(tree.nodes ? { nodes: [...tree.nodes].sort(byFullName) } : {}),
    ...(tree.orphanedNodes ? { orphanedNodes: [...tree.orphanedNodes].sort(byFullName) } : {}),
  };
  if (size <= 0) return [t];
  const items: Array<(s: ApplicationTree) => void> = [
    ...(t.nodes ?? []).map((n) => (s: ApplicationTree) => (s.nodes ??= []).push(n)),
    ...(t.orphanedNodes ?? []).map((n) => (s: ApplicationTree) => (s.orphanedNodes ??= []).push(n)),
    ...(t.hosts ?? []).map((h) => (s: ApplicationTree) => (s.hosts ??= []).push(h)),
  ];
  const shards: ApplicationTree[] = [];
  for (let i = 0; i < items.length; i += size) {
    const shard: ApplicationTree = {};
    for (const add of items.slice(i, i + size)) add(shard);
    shards.push(shard);
  }
  if (shards.length === 0) return [{ shardsCount: 0 }];
  (shards[0] as ApplicationTree).shardsCount = shards.length;
  return shards;
}
