// What Argo CD's controller puts on a resource tree node, pure (controller/cache/cache.go
// asResourceNode, controller/cache/info.go): group, version, kind, namespace, name, uid, the
// owners as parentRefs, resourceVersion, createdAt, health, and for a few kinds the info lines,
// images and networkingInfo the UI shows. Left out (docs/semantics.md): a Pod's resource requests
// info, Ingress external URLs, Istio and Gateway API routes, and the tree's hosts.
import type { KubeObject } from '../api/index.ts';
import { groupOf } from '../api/manifest.ts';
import type { HealthStatus } from '../sync/index.ts';
import type { InfoItem, NodeHealth, ResourceNetworkingInfo, ResourceNode, ResourceRef } from './types.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const strMap = (v: unknown): Record<string, string> | undefined => {
  if (!isObj(v)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
};

function versionOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
}

/** A node's health as the tree carries it: status and message only; none without a check. */
export function nodeHealth(h: HealthStatus | null | undefined): NodeHealth | undefined {
  if (!h) return undefined;
  return { ...(h.status ? { status: h.status } : {}), ...(h.message ? { message: h.message } : {}) };
}

/** resource.GetRevision: a Deployment's (or Rollout's) revision annotation. */
function revisionInfo(o: KubeObject): InfoItem[] {
  const annotations = strMap(o.metadata['annotations']) ?? {};
  for (const name of ['deployment.kubernetes.io/revision', 'rollout.argoproj.io/revision']) {
    if (name in annotations) {
      const n = Number.parseInt(annotations[name] as string, 10);
      return Number.isFinite(n) && n > 0 ? [{ name: 'Revision', value: `Rev:${n}` }] : [];
    }
  }
  return [];
}

/** populatePodInfo, without the resource requests lines. */
function podInfo(o: KubeObject): { info: InfoItem[]; images: string[]; networking: ResourceNetworkingInfo } {
  const spec = isObj(o['spec']) ? o['spec'] : {};
  const status = isObj(o['status']) ? o['status'] : {};
  const containers = arr(spec['containers']).filter(isObj);
  const initContainers = arr(spec['initContainers']).filter(isObj);
  const images = [...new Set([...initContainers, ...containers].map((c) => str(c['image'])))];
  const phase = str(status['phase']);
  let reason = str(status['reason']) || phase;
  for (const c of arr(status['conditions']).filter(isObj))
    if (c['type'] === 'PodScheduled' && c['reason'] === 'SchedulingGated') reason = 'SchedulingGated';
  const restartable = new Set(initContainers.filter((c) => c['restartPolicy'] === 'Always').map((c) => str(c['name'])));
  let total = containers.length + restartable.size;
  let ready = 0;
  let restarts = 0;
  let initializing = false;
  const initStatuses = arr(status['initContainerStatuses']).filter(isObj);
  for (let i = 0; i < initStatuses.length; i++) {
    const c = initStatuses[i] as Obj;
    restarts += Number(c['restartCount'] ?? 0);
    const state = isObj(c['state']) ? c['state'] : {};
    const term = isObj(state['terminated']) ? state['terminated'] : undefined;
    const wait = isObj(state['waiting']) ? state['waiting'] : undefined;
    if (term && Number(term['exitCode'] ?? 0) === 0) continue;
    if (restartable.has(str(c['name'])) && c['started'] === true) {
      if (c['ready'] === true) ready++;
      continue;
    }
    if (term) {
      reason = str(term['reason'])
        ? `Init:${str(term['reason'])}`
        : Number(term['signal'] ?? 0) !== 0
          ? `Init:Signal:${Number(term['signal'])}`
          : `Init:ExitCode:${Number(term['exitCode'] ?? 0)}`;
    } else if (wait && str(wait['reason']) && wait['reason'] !== 'PodInitializing') {
      reason = `Init:${str(wait['reason'])}`;
    } else reason = `Init:${i}/${initContainers.length}`;
    initializing = true;
    break;
  }
  const initialized = arr(status['conditions'])
    .filter(isObj)
    .some((c) => c['type'] === 'Initialized' && c['status'] === 'True');
  if (!initializing || initialized) {
    let running = false;
    const statuses = arr(status['containerStatuses']).filter(isObj);
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i] as Obj;
      restarts += Number(c['restartCount'] ?? 0);
      const state = isObj(c['state']) ? c['state'] : {};
      const term = isObj(state['terminated']) ? state['terminated'] : undefined;
      const wait = isObj(state['waiting']) ? state['waiting'] : undefined;
      if (wait && str(wait['reason'])) reason = str(wait['reason']);
      else if (term && str(term['reason'])) reason = str(term['reason']);
      else if (term)
        reason =
          Number(term['signal'] ?? 0) !== 0
            ? `Signal:${Number(term['signal'])}`
            : `ExitCode:${Number(term['exitCode'] ?? 0)}`;
      else if (c['ready'] === true && isObj(state['running'])) {
        running = true;
        ready++;
      }
    }
    if (reason === 'Completed' && running) reason = 'Running';
  }
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  if (o.metadata['deletionTimestamp'] && status['reason'] === 'NodeLost') reason = 'Unknown';
  else if (o.metadata['deletionTimestamp'] && !terminal) reason = 'Terminating';
  total = Math.max(total, 0);
  const info: InfoItem[] = [];
  if (reason) info.push({ name: 'Status Reason', value: reason });
  info.push({ name: 'Node', value: str(spec['nodeName']) });
  info.push({ name: 'Containers', value: `${ready}/${total}` });
  if (restarts > 0) info.push({ name: 'Restart Count', value: String(restarts) });
  const labels = strMap(o.metadata['labels']);
  return { info, images, networking: { ...(labels ? { labels } : {}) } };
}

/** getIngress: a LoadBalancer's addresses, hostname before ip. */
function lbIngress(o: KubeObject): Array<{ ip?: string; hostname?: string }> {
  const status = isObj(o['status']) ? o['status'] : {};
  const lb = isObj(status['loadBalancer']) ? status['loadBalancer'] : {};
  const out: Array<{ ip?: string; hostname?: string }> = [];
  for (const i of arr(lb['ingress']).filter(isObj)) {
    if (i['hostname'] !== undefined && i['hostname'] !== null) out.push({ hostname: String(i['hostname']) });
    else if (i['ip'] !== undefined && i['ip'] !== null) out.push({ ip: String(i['ip']) });
  }
  return out;
}

/** populateIngressInfo's targets: the Services its rules and default backend name (URLs left out). */
function ingressTargets(o: KubeObject): ResourceRef[] {
  const spec = isObj(o['spec']) ? o['spec'] : {};
  const v1 = o.apiVersion === 'networking.k8s.io/v1';
  const service = (backend: unknown): string | undefined => {
    if (!isObj(backend)) return undefined;
    if (v1) return isObj(backend['service']) ? str(backend['service']['name']) || undefined : undefined;
    return str(backend['serviceName']) || undefined;
  };
  const names = new Set<string>();
  const def = service(spec['defaultBackend'] ?? spec['backend']);
  if (def) names.add(def);
  for (const rule of arr(spec['rules']).filter(isObj)) {
    const http = isObj(rule['http']) ? rule['http'] : {};
    for (const p of arr(http['paths']).filter(isObj)) {
      const name = service(p['backend']);
      if (name) names.add(name);
    }
  }
  return [...names].sort().map((name) => ({ kind: 'Service', namespace: o.metadata.namespace ?? '', name }));
}

/**
 * asResourceNode for a live object: `parentNamespace` says where each owner lives (its namespace
 * when it is among the namespace's objects, '' otherwise: cluster-scoped, as Argo CD decides).
 */
export function resourceNode(
  o: KubeObject,
  health: HealthStatus | null | undefined,
  parentNamespace: (ownerUid: string) => string,
): ResourceNode {
  const md = o.metadata;
  const parentRefs: ResourceRef[] = arr(md['ownerReferences'])
    .filter(isObj)
    .map((r) => ({
      group: groupOf(str(r['apiVersion'])),
      version: versionOf(str(r['apiVersion'])),
      kind: str(r['kind']),
      namespace: parentNamespace(str(r['uid'])),
      name: str(r['name']),
      uid: str(r['uid']),
    }));
  let info: InfoItem[] = revisionInfo(o);
  let images: string[] | undefined;
  let networkingInfo: ResourceNetworkingInfo | undefined;
  const group = groupOf(o.apiVersion);
  const links = Object.entries(strMap(md['annotations']) ?? {})
    .filter(([k, v]) => k.startsWith('link.argocd.argoproj.io/') && /^https?:\/\//i.test(v.split('|').pop() ?? ''))
    .map(([, v]) => v);
  if (links.length > 0) networkingInfo = { externalURLs: links };
  if (group === '' && o.kind === 'Pod') {
    const p = podInfo(o);
    info = [...info, ...p.info];
    images = p.images;
    networkingInfo = { ...p.networking, ...(links.length ? { externalURLs: links } : {}) };
  } else if (group === '' && o.kind === 'Service') {
    const spec = isObj(o['spec']) ? o['spec'] : {};
    const selector = strMap(spec['selector']);
    networkingInfo = {
      ...(selector ? { targetLabels: selector } : {}),
      ...(spec['type'] === 'LoadBalancer' ? { ingress: lbIngress(o) } : {}),
      ...(links.length ? { externalURLs: links } : {}),
    };
  } else if ((group === 'networking.k8s.io' || group === 'extensions') && o.kind === 'Ingress') {
    networkingInfo = {
      targetRefs: ingressTargets(o),
      ingress: lbIngress(o),
      ...(links.length ? { externalURLs: links } : {}),
    };
  } else if (group === 'argoproj.io' && o.kind === 'Application') {
    const url = (strMap(md['annotations']) ?? {})['argocd.argoproj.io/managed-by-url'];
    if (url !== undefined) info = [...info, { name: 'managed-by-url', value: url }];
  }
  const h = nodeHealth(health);
  const created = str(md['creationTimestamp']);
  return {
    group,
    version: versionOf(o.apiVersion),
    kind: o.kind,
    namespace: md.namespace ?? '',
    name: md.name,
    uid: str(md['uid']),
    ...(parentRefs.length ? { parentRefs } : {}),
    ...(info.length ? { info } : {}),
    ...(networkingInfo ? { networkingInfo } : {}),
    resourceVersion: str(md['resourceVersion']),
    ...(images?.length ? { images } : {}),
    ...(h ? { health: h } : {}),
    ...(created ? { createdAt: created } : {}),
  };
}
