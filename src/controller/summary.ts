// status.summary as Argo CD's controller writes it (ApplicationTree.GetSummary, from the resource
// info controller/cache/info.go gathers): the external URLs and container images of the
// Application's resources, each list sorted and without repeats, and isAppOfApps.
//
// External URLs: every `link.argocd.argoproj.io/<title>` annotation of a resource whose URL (the
// part after a `|`, else the whole value) is http or https (the rest are dropped, as Argo CD does
// against javascript: links), the Ingress rules' hosts with their paths (https when the Ingress
// has TLS for the host or a TLS secret; a rule without a host uses the load balancer's hostname
// or IP), unless `argocd.argoproj.io/ignore-default-links: "true"`, and the Application's own link
// annotations. A LoadBalancer Service adds none (Argo CD records its ingress, not a URL).
//
// Images: Argo CD's come from the Pods of its resource tree (the managed objects' children, which
// impersync's comparison does not read); here from the managed Pods and from the pod templates of
// the managed workloads, the images their Pods run once rolled out (during a rollout Argo CD also
// lists the old Pods' images).
import type { KubeObject } from '../api/index.ts';

export interface ApplicationSummary {
  externalURLs?: string[];
  images?: string[];
  isAppOfApps?: boolean;
  [k: string]: unknown;
}

const LINK_PREFIX = 'link.argocd.argoproj.io/';
const IGNORE_DEFAULT_LINKS = 'argocd.argoproj.io/ignore-default-links';
const WORKLOADS = new Set(['apps/Deployment', 'apps/StatefulSet', 'apps/DaemonSet', 'apps/ReplicaSet', 'batch/Job']);

type Obj = Record<string, unknown>;
const obj = (x: unknown): Obj => (x && typeof x === 'object' && !Array.isArray(x) ? (x as Obj) : {});
const arr = (x: unknown): unknown[] => (Array.isArray(x) ? x : []);
const str = (x: unknown): string | undefined => (typeof x === 'string' ? x : undefined);

function groupOf(o: KubeObject): string {
  const v = o.apiVersion ?? '';
  return v.includes('/') ? v.slice(0, v.indexOf('/')) : '';
}

/** Argo CD's ValidateExternalURL: empty, or parses with an http or https scheme. */
function validLink(value: string): boolean {
  const bar = value.indexOf('|');
  const url = bar >= 0 ? value.slice(bar + 1) : value;
  if (url === '') return true;
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url);
  const scheme = m?.[1]?.toLowerCase();
  return scheme === 'http' || scheme === 'https';
}

function annotationLinks(annotations: Record<string, string> | undefined, validate: boolean): string[] {
  return Object.entries(annotations ?? {})
    .filter(([k, v]) => k.startsWith(LINK_PREFIX) && (!validate || validLink(v)))
    .map(([, v]) => v);
}

function podSpecImages(spec: Obj): string[] {
  return [...arr(spec['initContainers']), ...arr(spec['containers'])]
    .map((c) => str(obj(c)['image']))
    .filter((i): i is string => i !== undefined);
}

function imagesOf(o: KubeObject): string[] {
  const group = groupOf(o);
  if (group === '' && o.kind === 'Pod') return podSpecImages(obj(o['spec']));
  if (WORKLOADS.has(`${group}/${o.kind}`)) return podSpecImages(obj(obj(obj(o['spec'])['template'])['spec']));
  if (group === 'batch' && o.kind === 'CronJob')
    return podSpecImages(obj(obj(obj(obj(obj(o['spec'])['jobTemplate'])['spec'])['template'])['spec']));
  return [];
}

/** Argo CD's populateIngressInfo: one URL per path of a rule with a host (its own, or the load balancer's). */
function ingressURLs(o: KubeObject): string[] {
  const spec = obj(o['spec']);
  const lb = arr(obj(obj(o['status'])['loadBalancer'])['ingress']).map(obj);
  const lbHost = lb.map((i) => str(i['hostname']) || str(i['ip']) || '').find((h) => h !== '');
  const tls = arr(spec['tls']).map(obj);
  const out: string[] = [];
  for (const rule of arr(spec['rules']).map(obj)) {
    const host = str(rule['host']) || lbHost;
    if (!host) continue;
    let scheme = 'http';
    for (const t of tls) {
      if (t['secretName'] != null) scheme = 'https';
      if (t['host'] === host || arr(t['hosts']).includes(host)) scheme = 'https';
    }
    for (const p of arr(obj(rule['http'])['paths']).map(obj)) {
      const sub = (str(p['path']) ?? '').replace(/\*$/, '');
      out.push(`${scheme}://${host}${sub}`);
    }
  }
  return out;
}

function externalURLsOf(o: KubeObject): string[] {
  const annotations = o.metadata.annotations;
  const urls = annotationLinks(annotations, true);
  const group = groupOf(o);
  const isIngress = o.kind === 'Ingress' && (group === 'networking.k8s.io' || group === 'extensions');
  const ignore = annotations?.[IGNORE_DEFAULT_LINKS];
  const defaults = ignore === undefined || !/^(1|t|T|TRUE|true|True)$/.test(ignore);
  if (isIngress && defaults) urls.push(...ingressURLs(o));
  return urls;
}

/** status.summary from the live objects of the Application's resources and its own annotations. */
export function applicationSummary(
  appAnnotations: Record<string, string> | undefined,
  live: readonly KubeObject[],
): ApplicationSummary {
  const urls = new Set<string>();
  const images = new Set<string>();
  let appOfApps = false;
  for (const o of live) {
    for (const u of externalURLsOf(o)) urls.add(u);
    for (const i of imagesOf(o)) images.add(i);
    if (groupOf(o) === 'argoproj.io' && o.kind === 'Application') appOfApps = true;
  }
  for (const u of annotationLinks(appAnnotations, false)) urls.add(u);
  const sorted = (s: Set<string>) => [...s].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    ...(urls.size > 0 ? { externalURLs: sorted(urls) } : {}),
    ...(images.size > 0 ? { images: sorted(images) } : {}),
    ...(appOfApps ? { isAppOfApps: true } : {}),
  };
}
