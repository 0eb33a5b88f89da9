// Sorting documents into what explain and validate need: Applications, AppProjects, the argocd-cm
// ConfigMap and cluster Secrets, each parsed by its schema. Other kinds are ignored. A document of
// one of these kinds that does not fit its schema makes the input unusable; the error names the
// file, the document, the object and the field.
import {
  ARGOCD_CM,
  DocumentError,
  isClusterSecret,
  parseAppProject,
  parseApplication,
  parseClusterSecret,
  parseConfigMap,
  type AppProject,
  type Application,
  type Cluster,
  type ConfigMap,
} from '../api/index.ts';
import { describeWhere, type Loaded, type RawDocument, type Where } from './documents.ts';

export interface Located<T> {
  value: T;
  where: Where;
}

export interface Inventory {
  applications: Located<Application>[];
  projects: Located<AppProject>[];
  /** The argocd-cm ConfigMap, when the input has one. */
  configMap: Located<ConfigMap> | undefined;
  /** Set instead of `configMap` when reading it failed (live mode): settings then take defaults (spec §4). */
  configMapError?: Error | undefined;
  clusters: Located<Cluster>[];
}

function isArgo(raw: Record<string, unknown>, kind: string): boolean {
  return raw.kind === kind && typeof raw.apiVersion === 'string' && raw.apiVersion.startsWith('argoproj.io/');
}

function nameOf(raw: Record<string, unknown>): unknown {
  const meta = raw.metadata;
  return meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>).name : undefined;
}

/** Parses the documents of interest; the first bad one is the error. */
export function buildInventory(docs: readonly RawDocument[]): Loaded<Inventory> {
  const inventory: Inventory = { applications: [], projects: [], configMap: undefined, clusters: [] };
  for (const { object, where } of docs) {
    if (object === null || typeof object !== 'object' || Array.isArray(object)) continue; // not an object: not ours
    try {
      if (isArgo(object, 'Application')) inventory.applications.push({ value: parseApplication(object), where });
      else if (isArgo(object, 'AppProject')) inventory.projects.push({ value: parseAppProject(object), where });
      else if (object.kind === 'ConfigMap' && nameOf(object) === ARGOCD_CM) {
        if (inventory.configMap) {
          return {
            ok: false,
            error: `${describeWhere(where)}: a second ${ARGOCD_CM} ConfigMap (the first is in ${describeWhere(inventory.configMap.where)}); give one`,
          };
        }
        inventory.configMap = { value: parseConfigMap(object), where };
      } else if (isClusterSecret(object)) inventory.clusters.push({ value: parseClusterSecret(object), where });
    } catch (err) {
      const reason =
        err instanceof DocumentError
          ? err.message
          : `${String(object.kind)}: ${err instanceof Error ? err.message : String(err)}`;
      return { ok: false, error: `${describeWhere(where)}: ${reason}` };
    }
  }
  return { ok: true, value: inventory };
}
