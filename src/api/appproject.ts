// argoproj.io/v1alpha1 AppProject: the fields impersync reads (spec §1, §9), Argo CD's names.
import { z } from 'zod';
import { ObjectMetaSchema, parseObject } from './meta.ts';

export const DestinationServiceAccountSchema = z.looseObject({
  server: z.string(),
  namespace: z.string().optional(),
  defaultServiceAccount: z.string(),
});
export type DestinationServiceAccount = z.infer<typeof DestinationServiceAccountSchema>;

export const ProjectDestinationSchema = z.looseObject({
  server: z.string().optional(),
  name: z.string().optional(),
  namespace: z.string().optional(),
});
export type ProjectDestination = z.infer<typeof ProjectDestinationSchema>;

export const GroupKindSchema = z.looseObject({
  group: z.string().optional(),
  kind: z.string(),
});
export type GroupKind = z.infer<typeof GroupKindSchema>;

/** One entry of spec.syncWindows (Argo CD's SyncWindow). */
export const SyncWindowSchema = z.looseObject({
  kind: z.string().optional(),
  schedule: z.string().optional(),
  duration: z.string().optional(),
  applications: z.array(z.string()).optional(),
  namespaces: z.array(z.string()).optional(),
  clusters: z.array(z.string()).optional(),
  manualSync: z.boolean().optional(),
  timeZone: z.string().optional(),
  andOperator: z.boolean().optional(),
  description: z.string().optional(),
  syncOverrun: z.boolean().optional(),
});
export type SyncWindow = z.infer<typeof SyncWindowSchema>;

/** spec.orphanedResources: warn about objects in the destination namespaces no Application tracks. */
export const OrphanedResourcesSchema = z.looseObject({
  warn: z.boolean().optional(),
  ignore: z
    .array(z.looseObject({ group: z.string().optional(), kind: z.string().optional(), name: z.string().optional() }))
    .optional(),
});
export type OrphanedResources = z.infer<typeof OrphanedResourcesSchema>;

export const AppProjectSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.literal('AppProject').optional(),
  metadata: ObjectMetaSchema,
  spec: z
    .looseObject({
      description: z.string().optional(),
      sourceRepos: z.array(z.string()).optional(),
      sourceNamespaces: z.array(z.string()).optional(),
      destinations: z.array(ProjectDestinationSchema).optional(),
      destinationServiceAccounts: z.array(DestinationServiceAccountSchema).optional(),
      clusterResourceWhitelist: z.array(GroupKindSchema).optional(),
      clusterResourceBlacklist: z.array(GroupKindSchema).optional(),
      namespaceResourceWhitelist: z.array(GroupKindSchema).optional(),
      namespaceResourceBlacklist: z.array(GroupKindSchema).optional(),
      syncWindows: z.array(SyncWindowSchema).optional(),
      orphanedResources: OrphanedResourcesSchema.optional(),
      // Destinations only on the project's own clusters (project/clusters.ts).
      permitOnlyProjectScopedClusters: z.boolean().optional(),
      /** Argo CD's legacy commit signature keys (project/signatures.ts). */
      signatureKeys: z.array(z.looseObject({ keyID: z.string().optional() })).optional(),
      /**
       * Argo CD 3.5's sourceIntegrity (project/signatures.ts): git policies, each with `repos` as
       * objects `{url: <glob>}` (a `!` glob excludes), as Argo CD's SourceIntegrityGitPolicyRepo;
       * plain strings were never valid there. A missing `url` is Go's zero value, ''.
       */
      sourceIntegrity: z
        .looseObject({
          git: z
            .looseObject({
              policies: z
                .array(
                  z.looseObject({
                    repos: z.array(z.looseObject({ url: z.string().optional() })).optional(),
                    gpg: z
                      .looseObject({ mode: z.string().optional(), keys: z.array(z.string()).optional() })
                      .nullable()
                      .optional(),
                  }),
                )
                .optional(),
            })
            .nullable()
            .optional(),
        })
        .nullable()
        .optional(),
    })
    .default({}),
  status: z.record(z.string(), z.unknown()).optional(),
});
export type AppProject = z.infer<typeof AppProjectSchema>;

export function parseAppProject(raw: unknown): AppProject {
  return parseObject('AppProject', AppProjectSchema, raw);
}
