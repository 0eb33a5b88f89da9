// What the requests made in an async call chain are made for: the Application a refresh or a sync
// works on, so that the metrics hook of the destination transports (transport.ts) can count each
// request against it (Argo CD's argocd_app_k8s_request_total, whose transport wrapper is built per
// Application). The controller's work queues enter it per Application (controller/manager.ts);
// watches started on an Application's behalf but shared by all leave it (live-cache.ts).
import { AsyncLocalStorage } from 'node:async_hooks';

export interface RequestPurpose {
  namespace: string;
  name: string;
  project: string;
  /** The Application's operation is a dry-run sync. */
  dryRun: boolean;
}

const storage = new AsyncLocalStorage<RequestPurpose>();

/** Runs `fn` with its requests counted against `purpose`. */
export function runFor<T>(purpose: RequestPurpose, fn: () => T): T {
  return storage.run(purpose, fn);
}

/** Runs `fn` outside any Application (a shared watch it starts outlives the one that asked). */
export function runShared<T>(fn: () => T): T {
  return storage.exit(fn);
}

/** The Application the current requests are made for, if any. */
export function currentPurpose(): RequestPurpose | undefined {
  return storage.getStore();
}

/**
 * A request as Argo CD's kubeclientmetrics describes it (argoproj/pkg kubeclientmetrics
 * parseRequest): its verb (List, Watch, Get, Create, Update, Patch, Delete, Unknown), the resource
 * (the path's plural), and the namespace in the path.
 */
function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export function describeRequest(
  method: string,
  path: string,
): { verb: string; resourceKind: string; resourceNamespace: string } {
  const q = path.indexOf('?');
  const pathname = q >= 0 ? path.slice(0, q) : path;
  const query = new URLSearchParams(q >= 0 ? path.slice(q + 1) : '');
  const parts = pathname.split('/').filter((p) => p !== '');
  // /api/v1/... or /apis/group/version/...
  const rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : [];
  let namespace = '';
  let segs = rest;
  if (segs[0] === 'namespaces' && segs.length >= 3) {
    namespace = decode(segs[1] ?? '');
    segs = segs.slice(2);
  }
  // segs: [resource] (a collection), [resource, name], [resource, name, subresource]; or [namespaces, name].
  const named = segs.length >= 2;
  let verb: string;
  switch (method) {
    case 'POST':
      verb = 'Create';
      break;
    case 'DELETE':
      verb = 'Delete';
      break;
    case 'PATCH':
      verb = 'Patch';
      break;
    case 'PUT':
      verb = 'Update';
      break;
    case 'GET':
      verb = named ? 'Get' : ['true', '1'].includes(query.get('watch') ?? '') ? 'Watch' : 'List';
      break;
    default:
      verb = 'Unknown';
  }
  return { verb, resourceKind: decode(segs[0] ?? ''), resourceNamespace: namespace };
}
