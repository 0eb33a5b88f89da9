// Reading explain/validate's objects live from the control cluster of a kubeconfig (no -f): the
// Applications and AppProjects of a namespace, its argocd-cm and its cluster Secrets, as raw JSON
// through the controller's own connection (kube/control.ts; client-node's typed models would drop
// unknown fields).
import { ARGOCD_CM, SECRET_TYPE_LABEL } from '../api/index.ts';
import {
  REPOSITORY_SECRET_TYPES,
  SSH_KNOWN_HOSTS_CM,
  SSH_KNOWN_HOSTS_KEY,
  TLS_CERTS_CM,
  parseRepositorySecret,
  type RepositoryConfig,
} from '../api/repository.ts';
import { EMPTY_REPOSITORY_STATE, type RepositoryState } from '../repository/access.ts';
import { ControlClient } from '../kube/control.ts';
import { loadControllerCredential } from '../kube/credentials.ts';
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

async function list(
  control: ControlClient,
  path: string,
  apiVersion: string,
  kind: string,
  where: string,
): Promise<RawDocument[]> {
  const res = await control.request<{ items?: unknown[] } | null>({ method: 'GET', path });
  if (!res.ok) throw new Error(`GET ${path}: ${res.error.code} ${res.error.message}`);
  const items = Array.isArray(res.value?.items) ? res.value.items : [];
  // List items from the core API carry no apiVersion/kind; set them so the inventory can sort them.
  return items
    .filter((i): i is Record<string, unknown> => i !== null && typeof i === 'object')
    .map((object) => ({ object: { ...object, apiVersion, kind }, where: { file: where, document: 0 } }));
}

/** Lists the objects; a failure to reach the cluster or to list is the error (argocd-cm aside). */
export async function loadLiveInventory(source: LiveSource): Promise<Loaded<Inventory>> {
  let control: ControlClient;
  try {
    control = new ControlClient(
      await loadControllerCredential({ kubeconfig: source.kubeconfig, context: source.context }),
    );
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
  try {
    return await readInventory(control, source);
  } finally {
    await control.close();
  }
}

async function readInventory(control: ControlClient, source: LiveSource): Promise<Loaded<Inventory>> {
  const ns = encodeURIComponent(source.namespace);
  const appNs = encodeURIComponent(source.applicationNamespace ?? source.namespace);
  const where = `cluster ${control.server}`;
  const docs: RawDocument[] = [];
  let configMapError: Error | undefined;
  try {
    docs.push(
      ...(await list(
        control,
        `/apis/argoproj.io/v1alpha1/namespaces/${appNs}/applications`,
        'argoproj.io/v1alpha1',
        'Application',
        `${where}, namespace ${source.applicationNamespace ?? source.namespace}`,
      )),
    );
    docs.push(
      ...(await list(
        control,
        `/apis/argoproj.io/v1alpha1/namespaces/${ns}/appprojects`,
        'argoproj.io/v1alpha1',
        'AppProject',
        `${where}, namespace ${source.namespace}`,
      )),
    );
    const selector = encodeURIComponent(`${SECRET_TYPE_LABEL}=cluster`);
    docs.push(
      ...(await list(
        control,
        `/api/v1/namespaces/${ns}/secrets?labelSelector=${selector}`,
        'v1',
        'Secret',
        `${where}, namespace ${source.namespace}`,
      )),
    );
  } catch (err) {
    return { ok: false, error: `${where}: ${(err as Error).message}` };
  }
  const cm = await control.request<Record<string, unknown> | null>({
    method: 'GET',
    path: `/api/v1/namespaces/${ns}/configmaps/${ARGOCD_CM}`,
  });
  if (cm.ok && cm.value !== null && typeof cm.value === 'object')
    docs.push({
      object: { ...cm.value, apiVersion: 'v1', kind: 'ConfigMap' },
      where: { file: `${where}, namespace ${source.namespace}`, document: 0 },
    });
  // Not found: settings take their defaults (with explain's warning); other failures are §4 read errors.
  else if (!cm.ok && cm.error.code !== 404)
    configMapError = new Error(
      `GET /api/v1/namespaces/${ns}/configmaps/${ARGOCD_CM}: ${cm.error.code} ${cm.error.message}`,
    );
  const inventory = buildInventory(docs);
  if (inventory.ok) inventory.value.configMapError = configMapError;
  return inventory;
}

/**
 * The repository Secrets, credential templates and the two repository ConfigMaps of the control
 * namespace, as the controller's cache reads them (`impersync diff` renders private repositories
 * with them). Unreadable ones are left out: the render then says what it could not reach.
 */
export async function loadLiveRepositories(source: LiveSource): Promise<RepositoryState> {
  let control: ControlClient;
  try {
    control = new ControlClient(
      await loadControllerCredential({ kubeconfig: source.kubeconfig, context: source.context }),
    );
  } catch {
    return EMPTY_REPOSITORY_STATE;
  }
  try {
    const ns = encodeURIComponent(source.namespace);
    const selector = encodeURIComponent(`${SECRET_TYPE_LABEL} in (${REPOSITORY_SECRET_TYPES.join(',')})`);
    const secrets = await control.request<{ items?: unknown[] } | null>({
      method: 'GET',
      path: `/api/v1/namespaces/${ns}/secrets?labelSelector=${selector}`,
    });
    const configs: RepositoryConfig[] = [];
    const errors: string[] = [];
    for (const item of secrets.ok ? (secrets.value?.items ?? []) : []) {
      try {
        configs.push(parseRepositorySecret({ ...(item as object), apiVersion: 'v1', kind: 'Secret' }));
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    const data = async (name: string): Promise<Record<string, string>> => {
      const cm = await control.request<{ data?: Record<string, string> } | null>({
        method: 'GET',
        path: `/api/v1/namespaces/${ns}/configmaps/${name}`,
      });
      // Without a prototype, as the controller's cache holds it: a URL's host may be `constructor`.
      return Object.assign(Object.create(null) as Record<string, string>, cm.ok ? cm.value?.data : {});
    };
    const knownHosts = (await data(SSH_KNOWN_HOSTS_CM))[SSH_KNOWN_HOSTS_KEY] ?? '';
    return { configs, errors, knownHosts, tlsCerts: await data(TLS_CERTS_CM) };
  } finally {
    await control.close();
  }
}
