// Reading explain/validate's objects live from the control cluster of a kubeconfig (no -f): the
// Applications and AppProjects of a namespace, its argocd-cm and its cluster Secrets, as raw JSON
// through the controller's KubeApi (client-node's typed models would drop unknown fields).
import { ARGOCD_CM, SECRET_TYPE_LABEL } from '../api/index.ts';
import { ApiError, KubeApi } from '../controller/kubeapi.ts';
import { loadKubeConfig } from '../kube/credentials.ts';
import type { Loaded, RawDocument } from './documents.ts';
import { buildInventory, type Inventory } from './inventory.ts';

export interface LiveSource {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  /** The control namespace (argocd-cm, AppProjects, cluster Secrets). */
  namespace: string;
  /** Where Applications are listed; defaults to `namespace`. */
  applicationNamespace?: string | undefined;
}

const REQUEST_TIMEOUT_MS = 30_000;

async function list(
  api: KubeApi,
  path: string,
  apiVersion: string,
  kind: string,
  where: string,
): Promise<RawDocument[]> {
  const body = (await api.call('GET', path, { timeoutMs: REQUEST_TIMEOUT_MS })) as { items?: unknown[] } | null;
  const items = Array.isArray(body?.items) ? body.items : [];
  // List items from the core API carry no apiVersion/kind; set them so the inventory can sort them.
  return items
    .filter((i): i is Record<string, unknown> => i !== null && typeof i === 'object')
    .map((object) => ({ object: { ...object, apiVersion, kind }, where: { file: where, document: 0 } }));
}

/** Lists the objects; a failure to reach the cluster or to list is the error (argocd-cm aside). */
export async function loadLiveInventory(source: LiveSource): Promise<Loaded<Inventory>> {
  let api: KubeApi;
  try {
    api = new KubeApi(loadKubeConfig({ kubeconfig: source.kubeconfig, context: source.context }));
    api.server();
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
  const ns = encodeURIComponent(source.namespace);
  const appNs = encodeURIComponent(source.applicationNamespace ?? source.namespace);
  const where = `cluster ${api.server()}`;
  const docs: RawDocument[] = [];
  let configMapError: Error | undefined;
  try {
    docs.push(
      ...(await list(
        api,
        `/apis/argoproj.io/v1alpha1/namespaces/${appNs}/applications`,
        'argoproj.io/v1alpha1',
        'Application',
        `${where}, namespace ${source.applicationNamespace ?? source.namespace}`,
      )),
    );
    docs.push(
      ...(await list(
        api,
        `/apis/argoproj.io/v1alpha1/namespaces/${ns}/appprojects`,
        'argoproj.io/v1alpha1',
        'AppProject',
        `${where}, namespace ${source.namespace}`,
      )),
    );
    const selector = encodeURIComponent(`${SECRET_TYPE_LABEL}=cluster`);
    docs.push(
      ...(await list(
        api,
        `/api/v1/namespaces/${ns}/secrets?labelSelector=${selector}`,
        'v1',
        'Secret',
        `${where}, namespace ${source.namespace}`,
      )),
    );
  } catch (err) {
    return { ok: false, error: `${where}: ${(err as Error).message}` };
  }
  try {
    const cm = await api.call('GET', `/api/v1/namespaces/${ns}/configmaps/${ARGOCD_CM}`, {
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
    if (cm !== null && typeof cm === 'object')
      docs.push({
        object: { ...(cm as Record<string, unknown>), apiVersion: 'v1', kind: 'ConfigMap' },
        where: { file: `${where}, namespace ${source.namespace}`, document: 0 },
      });
  } catch (err) {
    // Not found: settings take their defaults (with explain's warning); other failures are §4 read errors.
    if (!(err instanceof ApiError && err.status === 404)) configMapError = err as Error;
  }
  const inventory = buildInventory(docs);
  if (inventory.ok) inventory.value.configMapError = configMapError;
  return inventory;
}
