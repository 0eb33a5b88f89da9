// The spec side of an Application: its source, destination, sync policy and the operation a user or
// an automated sync asks for, with Argo CD's names and meanings. Unknown fields are kept.
import { z } from 'zod';

/** An ext var or TLA: `value` is a string, or Jsonnet code when `code` is true. */
const JsonnetVarSchema = () => z.looseObject({ name: z.string(), value: z.string(), code: z.boolean().optional() });

export const ApplicationSourceSchema = z.looseObject({
  repoURL: z.string(),
  path: z.string().optional(),
  targetRevision: z.string().optional(),
  chart: z.string().optional(),
  /** Multi-source: the name `$ref/...` helm value files of other sources use for this source's repository. */
  ref: z.string().optional(),
  name: z.string().optional(),
  directory: z
    .looseObject({
      recurse: z.boolean().optional(),
      include: z.string().optional(),
      exclude: z.string().optional(),
      /** Argo CD's ApplicationSourceJsonnet: for the .jsonnet files of the directory (source/jsonnet.ts). */
      jsonnet: z
        .looseObject({
          extVars: z.array(JsonnetVarSchema()).optional(),
          tlas: z.array(JsonnetVarSchema()).optional(),
          libs: z.array(z.string()).optional(),
        })
        .optional(),
    })
    .optional(),
  helm: z
    .looseObject({
      releaseName: z.string().optional(),
      valueFiles: z.array(z.string()).optional(),
      values: z.string().optional(),
      valuesObject: z.record(z.string(), z.unknown()).optional(),
      parameters: z
        .array(z.looseObject({ name: z.string(), value: z.string().optional(), forceString: z.boolean().optional() }))
        .optional(),
    })
    .optional(),
  kustomize: z
    .looseObject({
      namePrefix: z.string().optional(),
      nameSuffix: z.string().optional(),
      images: z.array(z.string()).optional(),
      commonLabels: z.record(z.string(), z.string()).optional(),
    })
    .optional(),
  /** A config management plugin (source/cmp/): set at all, even `{}`, it is the source's type, as in Argo CD. */
  plugin: z
    .looseObject({
      name: z.string().optional(),
      env: z.array(z.looseObject({ name: z.string(), value: z.string() })).optional(),
      parameters: z
        .array(
          z.looseObject({
            name: z.string(),
            string: z.string().optional(),
            array: z.array(z.string()).optional(),
            map: z.record(z.string(), z.string()).optional(),
          }),
        )
        .optional(),
    })
    .optional(),
});
export type ApplicationSource = z.infer<typeof ApplicationSourceSchema>;

export const ApplicationDestinationSchema = z.looseObject({
  server: z.string().optional(),
  name: z.string().optional(),
  namespace: z.string().optional(),
});
export type ApplicationDestination = z.infer<typeof ApplicationDestinationSchema>;

export const ResourceRefSchema = z.looseObject({
  group: z.string().optional(),
  kind: z.string(),
  name: z.string(),
  namespace: z.string().optional(),
});
export type ResourceRef = z.infer<typeof ResourceRefSchema>;

export const RetryStrategySchema = z.looseObject({
  limit: z.number().int().optional(),
  backoff: z
    .looseObject({
      duration: z.string().optional(),
      factor: z.number().optional(),
      maxDuration: z.string().optional(),
    })
    .optional(),
  /** Argo CD 3.x: each retry syncs the latest revisions of the sources, not the ones it first resolved. */
  refresh: z.boolean().optional(),
});
export type RetryStrategy = z.infer<typeof RetryStrategySchema>;

/** One entry of spec.ignoreDifferences (Argo CD's ResourceIgnoreDifferences). */
export const ResourceIgnoreDifferencesSchema = z.looseObject({
  group: z.string().optional(),
  kind: z.string(),
  name: z.string().optional(),
  namespace: z.string().optional(),
  jsonPointers: z.array(z.string()).optional(),
  jqPathExpressions: z.array(z.string()).optional(),
  managedFieldsManagers: z.array(z.string()).optional(),
});
export type ResourceIgnoreDifferences = z.infer<typeof ResourceIgnoreDifferencesSchema>;

/** syncPolicy.managedNamespaceMetadata: labels and annotations of a namespace CreateNamespace=true makes. */
export const ManagedNamespaceMetadataSchema = z.looseObject({
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
export type ManagedNamespaceMetadata = z.infer<typeof ManagedNamespaceMetadataSchema>;

export const SyncPolicySchema = z.looseObject({
  automated: z
    .looseObject({
      prune: z.boolean().optional(),
      selfHeal: z.boolean().optional(),
      allowEmpty: z.boolean().optional(),
      enabled: z.boolean().optional(),
    })
    .optional(),
  syncOptions: z.array(z.string()).optional(),
  retry: RetryStrategySchema.optional(),
  managedNamespaceMetadata: ManagedNamespaceMetadataSchema.optional(),
});
export type SyncPolicy = z.infer<typeof SyncPolicySchema>;

/** operation.sync.syncStrategy: `apply` (no hooks) or `hook` (the default), each with `force`. */
export const SyncStrategySchema = z.looseObject({
  apply: z.looseObject({ force: z.boolean().optional() }).optional(),
  hook: z.looseObject({ force: z.boolean().optional() }).optional(),
});
export type SyncStrategy = z.infer<typeof SyncStrategySchema>;

export const SyncOperationSchema = z.looseObject({
  revision: z.string().optional(),
  /** A rollback (or a sync of other sources): render this source instead of spec.source. */
  source: ApplicationSourceSchema.optional(),
  /** Multi-source: one revision per source, and the sources of a rollback to a multi-source history entry. */
  revisions: z.array(z.string()).optional(),
  sources: z.array(ApplicationSourceSchema).optional(),
  syncStrategy: SyncStrategySchema.optional(),
  prune: z.boolean().optional(),
  dryRun: z.boolean().optional(),
  syncOptions: z.array(z.string()).optional(),
  resources: z.array(ResourceRefSchema).optional(),
  /** Argo CD's SelfHealAttemptsCount: the self-heal syncs of this revision so far (the backoff's step). */
  autoHealAttemptsCount: z.number().int().optional(),
  /** `argocd app sync --local`: the objects to apply instead of the source's (controller/render.ts). */
  manifests: z.array(z.string()).optional(),
});
export type SyncOperation = z.infer<typeof SyncOperationSchema>;

export const OperationSchema = z.looseObject({
  sync: SyncOperationSchema.optional(),
  initiatedBy: z.looseObject({ username: z.string().optional(), automated: z.boolean().optional() }).optional(),
  retry: RetryStrategySchema.optional(),
});
export type Operation = z.infer<typeof OperationSchema>;
