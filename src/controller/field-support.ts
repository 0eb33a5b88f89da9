// What impersync does with each thing an Argo CD user writes, in one table per kind of input (the
// rule of issue 14: honoured, or said). Every name in Argo CD's surface
// (test/controller/fixtures/argocd-surface.json, from its CRDs, documentation and source) must match
// an entry here; the enumerating test fails on one that does not.
//
// - honoured: acted on as Argo CD acts on it.
// - refused: set, it stops the render or the admission with an error naming it (said, loudly).
// - warned: accepted and not acted on; named in the UnsupportedFieldWarning condition and event.
// - elsewhere: read by a part of Argo CD impersync does not replace (its API server, UI, Dex,
//   notifications, ApplicationSets, the repo-server's webhook): no sync or diff result depends on it.
export type Support = 'honoured' | 'refused' | 'warned' | 'elsewhere';

export interface FieldRule {
  /** A path (`spec.source.path`), or a prefix ending in `.**` that covers everything under it. */
  pattern: string;
  support: Support;
  /** Where it is honoured, or why not. */
  note: string;
}

const h = (pattern: string, note: string): FieldRule => ({ pattern, support: 'honoured', note });
const r = (pattern: string, note: string): FieldRule => ({ pattern, support: 'refused', note });
const w = (pattern: string, note: string): FieldRule => ({ pattern, support: 'warned', note });
const e = (pattern: string, note: string): FieldRule => ({ pattern, support: 'elsewhere', note });

/** spec.source.helm fields honoured (source/helm.ts SUPPORTED), each with where. */
const HELM_HONOURED: ReadonlyArray<[string, string]> = [
  ['releaseName', 'helm template flags (source/helm.ts)'],
  ['valueFiles[]', 'helm template --values (source/helm.ts); `$ref/...` from a ref source (controller/render.ts)'],
  ['values', 'helm template flags (source/helm.ts)'],
  ['valuesObject', 'helm template flags (source/helm.ts)'],
  ['parameters[].name', 'helm template flags (source/helm.ts)'],
  ['parameters[].value', 'helm template flags (source/helm.ts)'],
  ['parameters[].forceString', 'helm template flags (source/helm.ts)'],
  ['ignoreMissingValueFiles', 'helm template flags (source/helm.ts)'],
  ['skipCrds', 'helm template flags (source/helm.ts)'],
  ['skipTests', 'helm template flags (source/helm.ts)'],
  ['skipSchemaValidation', 'helm template flags (source/helm.ts)'],
  ['namespace', 'helm template flags (source/helm.ts)'],
  ['kubeVersion', 'helm template flags (source/helm.ts)'],
  ['apiVersions[]', 'helm template flags (source/helm.ts)'],
  [
    'passCredentials',
    "a chart's credentials sent to its download URL on another host (source/charts.ts, helm-repo.ts)",
  ],
  [
    'version',
    "'', v3 and v4 render with the renderer's Helm 4, as Argo CD v3.6.1; another is refused (source/helm.ts)",
  ],
  ['fileParameters[].name', 'helm template --set-file (source/helm.ts)'],
  [
    'fileParameters[].path',
    'helm template --set-file, resolved as a value file, inside the repository; `$ref/...` from a ref source (source/helm.ts, controller/render.ts)',
  ],
];
/** spec.source.directory.jsonnet, for the directory's .jsonnet files (source/jsonnet.ts, tools/jsonnet). */
const JSONNET_HONOURED: ReadonlyArray<[string, string]> = [
  ['extVars[].name', 'a go-jsonnet ext var (source/jsonnet.ts)'],
  ['extVars[].value', 'its value, build variables substituted as Argo CD does (source/jsonnet.ts)'],
  ['extVars[].code', 'the value is Jsonnet code, not a string (source/jsonnet.ts)'],
  ['tlas[].name', 'a top-level argument (source/jsonnet.ts)'],
  ['tlas[].value', 'its value, build variables substituted as Argo CD does (source/jsonnet.ts)'],
  ['tlas[].code', 'the value is Jsonnet code, not a string (source/jsonnet.ts)'],
  ['libs[]', 'library paths relative to the repository root, never outside it (source/jsonnet.ts)'],
];
const KUSTOMIZE_HONOURED: [string, string][] = [
  ['version', 'the kustomize binary (source/tool-choice.ts)'],
  ['kubeVersion', "helmCharts' --helm-kube-version, over the destination's (source/kustomize.ts)"],
  ['apiVersions[]', "helmCharts' --helm-api-versions, over the destination's (source/kustomize.ts)"],
];
/** Edits of the app's own kustomization file, in a private copy of the checkout (source/kustomize-edits.ts). */
const KUSTOMIZE_EDITED = [
  'namePrefix',
  'nameSuffix',
  'images[]',
  'commonLabels',
  'forceCommonLabels',
  'labelWithoutSelector',
  'labelIncludeTemplates',
  'commonAnnotations',
  'forceCommonAnnotations',
  'commonAnnotationsEnvsubst',
  'namespace',
  'replicas[].name',
  'replicas[].count',
  'patches[].path',
  'patches[].patch',
  'patches[].target.**',
  'patches[].options',
  'components[]',
  'ignoreMissingComponents',
];

/**
 * The rules of one ApplicationSource at `prefix` (spec.source, spec.sources[], operation.sync.source,
 * operation.sync.sources[]). `multi`: one of several sources, where `ref` names it for `$ref/...`.
 */
function sourceRules(prefix: string, multi: boolean): FieldRule[] {
  return [
    h(`${prefix}.repoURL`, 'renderer (source/), with its repository Secret (repository/access.ts)'),
    h(`${prefix}.path`, 'renderer (source/)'),
    h(`${prefix}.targetRevision`, 'renderer (source/): a Git ref, or a chart version or semver constraint'),
    h(`${prefix}.chart`, 'charts from Helm repositories and OCI registries (source/charts.ts)'),
    ...['recurse', 'include', 'exclude'].map((f) => h(`${prefix}.directory.${f}`, 'renderer (source/render.ts)')),
    ...JSONNET_HONOURED.map(([f, note]) => h(`${prefix}.directory.jsonnet.${f}`, note)),
    r(
      `${prefix}.directory.**`,
      'other directory fields (disableExtensionFilter) are refused by the renderer (source/render.ts)',
    ),
    ...HELM_HONOURED.map(([f, note]) => h(`${prefix}.helm.${f}`, note)),
    r(`${prefix}.helm.**`, 'other helm fields are refused by the renderer (source/helm.ts)'),
    ...KUSTOMIZE_HONOURED.map(([f, note]) => h(`${prefix}.kustomize.${f}`, note)),
    ...KUSTOMIZE_EDITED.map((f) =>
      h(`${prefix}.kustomize.${f}`, "edits of the app's kustomization file, as Argo CD (source/kustomize-edits.ts)"),
    ),
    r(`${prefix}.kustomize.**`, 'other kustomize fields are refused by the renderer (source/kustomize.ts)'),
    h(`${prefix}.plugin.**`, 'config management plugins, through their argocd-cmp-server sidecars (source/cmp/)'),
    multi
      ? h(`${prefix}.ref`, 'a ref source for `$ref/...` value files, its revision resolved (controller/render.ts)')
      : w(`${prefix}.ref`, 'a ref has meaning only among spec.sources'),
    r(
      `${prefix}.tagPrefix`,
      'Argo CD filters Git tags by it to resolve a semver targetRevision, which impersync does not do: the Application is refused at admission (controller/refused-fields.ts)',
    ),
    e(`${prefix}.name`, 'a display name for the UI'),
  ];
}

export const APPLICATION_RULES: readonly FieldRule[] = [
  h('spec.project', 'admission (controller/admission.ts)'),
  h('spec.destination.**', 'admission, the destination cluster and namespace'),
  ...sourceRules('spec.source', false),
  // Multi-source Applications: each source rendered in its own request (controller/render.ts).
  ...sourceRules('spec.sources[]', true),
  r(
    'spec.sourceHydrator.**',
    'the source hydrator is not run: the Application is refused at admission, nothing synced (controller/refused-fields.ts)',
  ),
  h('spec.syncPolicy.automated.**', 'automated sync (controller/operation-policy.ts)'),
  h('spec.syncPolicy.syncOptions[]', 'each option: sync/options.ts (those it does not act on are warned by name)'),
  h('spec.syncPolicy.retry.limit', 'retry (controller/operation-policy.ts)'),
  h('spec.syncPolicy.retry.backoff.**', 'retry backoff (controller/operation-policy.ts)'),
  h('spec.syncPolicy.retry.refresh', 'each retry renders the latest revisions (controller/operation-attempt.ts)'),
  h('spec.syncPolicy.managedNamespaceMetadata.**', 'the namespace CreateNamespace=true manages (sync/namespace.ts)'),
  h('spec.ignoreDifferences[].**', 'comparison and RespectIgnoreDifferences (sync/ignore.ts)'),
  h('spec.revisionHistoryLimit', 'status.history length (controller/operation-policy.ts)'),
  e('spec.info[].**', 'shown by the UI'),
  h('operation.sync.revision', 'the revision rendered'),
  h('operation.sync.prune', 'prune'),
  h('operation.sync.dryRun', 'dry run'),
  h('operation.sync.syncOptions[]', 'as spec.syncPolicy.syncOptions'),
  h('operation.sync.resources[].**', 'selective sync'),
  h('operation.sync.syncStrategy.**', 'apply (no hooks) or hook, and force (sync/plan.ts)'),
  ...sourceRules('operation.sync.source', false),
  ...sourceRules('operation.sync.sources[]', true),
  h('operation.sync.revisions[]', "each source's revision (controller/render.ts)"),
  h(
    'operation.sync.manifests[]',
    "the objects applied instead of the source's, parsed by the renderer (source/local-manifests.ts)",
  ),
  h(
    'operation.sync.autoHealAttemptsCount',
    'the self-heal backoff counts its attempts here (controller/operation-policy.ts, self-heal.ts)',
  ),
  h('operation.initiatedBy.**', 'manual or automated (sync windows, history)'),
  h('operation.retry.limit', 'retry'),
  h('operation.retry.backoff.**', 'retry backoff'),
  h('operation.retry.refresh', 'each retry renders the latest revisions'),
  e('operation.info[].**', 'shown by the UI'),
];

export const APPPROJECT_RULES: readonly FieldRule[] = [
  h('spec.sourceRepos[]', 'project/repos.ts'),
  h('spec.sourceNamespaces[]', 'admission'),
  h('spec.destinations[].**', 'project/destinations.ts'),
  h('spec.destinationServiceAccounts[].**', 'impersonation/'),
  h('spec.clusterResourceWhitelist[].**', 'project/resources.ts'),
  h('spec.clusterResourceBlacklist[].**', 'project/resources.ts'),
  h('spec.namespaceResourceWhitelist[].**', 'project/resources.ts'),
  h('spec.namespaceResourceBlacklist[].**', 'project/resources.ts'),
  h('spec.syncWindows[].**', 'project/windows.ts, controller/sync-windows.ts'),
  h('spec.orphanedResources.**', 'OrphanedResourceWarning (sync/orphans.ts, controller/orphans.ts)'),
  h('spec.permitOnlyProjectScopedClusters', 'project/clusters.ts, project/limits.ts'),
  h(
    'spec.signatureKeys[].**',
    "a head policy for every repository, as Argo CD v3.6.1 migrates them: the revision's annotated tag, else its commit, verified by gpg (project/signatures.ts)",
  ),
  h(
    'spec.sourceIntegrity.**',
    "Argo CD's policies (repos[].url globs, `!` excludes, several matching an error); gpg modes none, head and strict (history back to seal commits) verified (project/signatures.ts)",
  ),
  e('spec.roles[].**', "Argo CD's API server RBAC"),
  e('spec.description', 'shown by the UI'),
];

/** argocd-cm keys; `<...>` stands for any text. */
export const ARGOCD_CM_RULES: readonly FieldRule[] = [
  h('application.sync.impersonation.enabled', 'impersonation/settings.ts'),
  h('application.sync.impersonation.enforced', 'impersonation/settings.ts'),
  h('globalProjects', 'impersonation/global-projects.ts'),
  h(
    'timeout.reconciliation',
    'the periodic refresh (impersonation/settings.ts), and how long it reuses resolved refs and Helm indexes (controller/reconciler.ts)',
  ),
  h('application.resourceTrackingMethod', 'sync/tracking.ts'),
  h('application.instanceLabelKey', 'sync/tracking.ts'),
  h('installationID', 'sync/tracking.ts'),
  h('resource.customizations', 'health and ignoreDifferences (sync/health/, sync/settings.ts)'),
  h('resource.customizations.health.<group_kind>', 'sync/health/customizations.ts'),
  h('resource.customizations.useOpenLibs.<group_kind>', 'sync/health/customizations.ts'),
  h('resource.customizations.ignoreDifferences.<group_kind>', 'sync/settings.ts'),
  h('resource.customizations.ignoreResourceUpdates.<group_kind>', 'controller/update-filter.ts'),
  h('resource.ignoreResourceUpdatesEnabled', 'controller/update-filter.ts'),
  h('resource.compareoptions', 'sync/settings.ts'),
  h('resource.exclusions', 'sync/filter.ts'),
  h('resource.inclusions', 'sync/filter.ts'),
  h('kustomize.buildOptions', 'source/kustomize-options.ts'),
  h(
    'resource.customizations.knownTypeFields.<group_kind>',
    'both sides of the comparison read through the Kubernetes type named, and Argo Rollouts\u2019 pod template as a PodSpec (sync/known-types.ts)',
  ),
  e('resource.customizations.actions.<group_kind>', "resource actions run from Argo CD's UI and CLI"),
  h('timeout.reconciliation.jitter', 'a random part of it delays each periodic refresh (controller/manager.ts)'),
  h(
    'timeout.hard.reconciliation',
    'a periodic refresh of a comparison older than it is hard, the renderer answering afresh (controller/status.ts, reconciler.ts)',
  ),
  h(
    'kustomize.buildOptions.<version>',
    'read as Argo CD v3.6.1 reads it, which builds every version with kustomize.buildOptions (api/tool-settings.ts)',
  ),
  h(
    'kustomize.path.<version>',
    'the binary for spec.source.kustomize.version (api/tool-settings.ts, source/tool-choice.ts)',
  ),
  h('kustomize.version.<version>', 'the older name of kustomize.path.<version> (api/tool-settings.ts)'),
  h(
    'kustomize.enable',
    'not "true": a Kustomize source is read as a plain directory, as Argo CD (source/tool-choice.ts)',
  ),
  h('helm.enable', 'not "true": a Helm source is read as a plain directory, as Argo CD (source/tool-choice.ts)'),
  h('jsonnet.enable', 'not "true": .jsonnet files are left out of a directory, as Argo CD (source/directory.ts)'),
  h(
    'helm.valuesFileSchemes',
    'the schemes a value file URL may use; the renderer fetches https and http ones, with no credential (source/helm.ts)',
  ),
  // Argo CD copies these node labels into the resource tree its UI shows; no sync or diff reads them.
  w(
    'application.allowedNodeLabels',
    'the resource tree has no hosts: they need every Node and Pod read as the controller',
  ),
  h('cluster.inClusterEnabled', "impersonation/destination.ts, with Argo CD's errors"),
  h(
    'resource.respectRBAC',
    'with the identity as the reader: unset, a kind it may not list fails the live state; normal and strict leave it out; another value fails (sync/orphans.ts, controller/comparison.ts)',
  ),
  // Read only by Argo CD's API server (server/application/application.go), when a user asks it to sync.
  e('application.sync.requireOverridePrivilegeForRevisionSync', "Argo CD's API server RBAC"),
  ...[
    'accounts.<name>',
    'accounts.<name>.enabled',
    'additionalUrls',
    'admin.enabled',
    'application.links',
    'commit.author.email',
    'commit.author.name',
    'dex.auth.connectorId',
    'dex.config',
    'exec.enabled',
    'exec.shells',
    'extension.config',
    'ga.anonymizeusers',
    'ga.trackingid',
    'help.chatText',
    'help.chatUrl',
    'help.download.<platform>',
    'oidc.config',
    'oidc.tls.insecure.skip.verify',
    'passwordPattern',
    'project.links',
    'resource.customLabels',
    'resource.excludeEventLabelKeys',
    'resource.includeEventLabelKeys',
    'resource.links',
    'resource.sensitive.mask.annotations',
    'server.maxPodLogsToRender',
    'server.rbac.rollback.enforce.enable',
    'sourceHydrator.commitMessageTemplate',
    'sourceHydrator.readmeMessageTemplate',
    'statusbadge.enabled',
    'statusbadge.url',
    'ui.bannercontent',
    'ui.bannerpermanent',
    'ui.bannerposition',
    'ui.bannerurl',
    'ui.cssurl',
    'ui.loginButtonText',
    'ui.view.resources.disabled',
    'url',
    'users.anonymous.enabled',
    'users.session.duration',
    'webhook.maxPayloadSizeMB',
    'webhook.refresh.jitter',
    'webhook.refresh.jitter.threshold',
  ].map((k) => e(k, "Argo CD's API server, UI, Dex or webhook")),
];

export const SYNC_OPTION_RULES: readonly FieldRule[] = [
  ...[
    'ApplyOutOfSyncOnly=false',
    'ApplyOutOfSyncOnly=true',
    'ClientSideApplyMigration=false',
    'ClientSideApplyMigration=true',
    'CreateNamespace=true',
    'Delete=confirm',
    'Delete=false',
    'FailOnSharedResource=true',
    'Force=true',
    'Prune=confirm',
    'Prune=false',
    'PruneLast=true',
    'PrunePropagationPolicy=background',
    'PrunePropagationPolicy=foreground',
    'PrunePropagationPolicy=orphan',
    'Replace=false',
    'Replace=true',
    'RespectIgnoreDifferences=true',
    'ServerSideApply=true',
    'Validate=false',
  ].map((o) => h(o, 'sync/options.ts')),
  h('SkipDryRunOnMissingResource=true', 'an unknown kind is not dry-run; applied at its wave (sync/prepare.ts)'),
  r('ServerSideApply=false', 'the sync fails before any write, naming it (sync/options.ts clientSideApplyRefusal)'),
];

export const COMPARE_OPTION_RULES: readonly FieldRule[] = [
  h('IgnoreExtraneous', 'sync/compare.ts'),
  h(
    'ServerSideDiff=true',
    "impersync always diffs server-side; with it (or controller.diff.server.side, or ServerSideApply=true) and without IncludeMutationWebhook=true, mutating webhooks' changes are left out as Argo CD's removeWebhookMutation does (sync/webhook-mutation.ts, sync/smd/)",
  ),
  r(
    'ServerSideDiff=false',
    'Argo CD then diffs client-side, which impersync does not: the Application is refused at admission (controller/refused-fields.ts)',
  ),
  h(
    'IncludeMutationWebhook=true',
    "the dry-run apply's answer is compared as it is, mutating webhooks' changes included (controller/semantics.ts)",
  ),
];

export const ANNOTATION_RULES: readonly FieldRule[] = [
  h('argocd.argoproj.io/sync-options', 'sync/options.ts'),
  h('argocd.argoproj.io/sync-wave', 'sync/order.ts'),
  h('argocd.argoproj.io/hook', 'sync/hooks.ts'),
  h('argocd.argoproj.io/hook-delete-policy', 'sync/hooks.ts'),
  h(
    'argocd.argoproj.io/hook-finalizer',
    'added to every hook a sync creates, removed once done (sync/hook-finalizer.ts)',
  ),
  h('argocd.argoproj.io/compare-options', 'sync/compare.ts'),
  h('argocd.argoproj.io/tracking-id', 'sync/tracking.ts'),
  h('argocd.argoproj.io/installation-id', 'sync/tracking.ts'),
  h('argocd.argoproj.io/refresh', 'controller/reconciler.ts'),
  h('argocd.argoproj.io/skip-reconcile', 'controller/triggers.ts'),
  h('argocd.argoproj.io/deletion-approved', 'controller/deletion-approval.ts'),
  h('argocd.argoproj.io/client-side-apply-migration-manager', 'sync/takeover.ts'),
  h('argocd.argoproj.io/ignore-healthcheck', 'sync/health/aggregate.ts'),
  h('argocd.argoproj.io/ignore-restart-policy', 'sync/health/pods.ts'),
  h('argocd.argoproj.io/secret-type', 'api/cluster.ts'),
  h(
    'argocd.argoproj.io/refresh-timestamp',
    'removed with the refresh annotation once the refresh is done, unless a new request changed it (controller/applications.ts removeRefreshAnnotations)',
  ),
  e(
    'argocd.argoproj.io/hydrate',
    "set by Argo CD's server on every refresh, read only by the source hydrator: without spec.sourceHydrator (refused here) Argo CD's controller ignores them too",
  ),
  e(
    'argocd.argoproj.io/hydrate-timestamp',
    "set by Argo CD's server on every refresh, read only by the source hydrator: without spec.sourceHydrator (refused here) Argo CD's controller ignores them too",
  ),
  h(
    'argocd.argoproj.io/manifest-generate-paths',
    "a new commit that changes none of its paths keeps the previous commit's manifests (source/generate-paths.ts, renderer/server.ts)",
  ),
  w('argocd.argoproj.io/kubernetes-version', 'the destination version is read from the destination'),
  e('argocd.argoproj.io/application-set-refresh', 'ApplicationSets'),
  e('argocd.argoproj.io/auto-label-cluster-info', "Argo CD's cluster Secret labels"),
  h(
    'argocd.argoproj.io/ignore-default-links',
    "an Ingress's URLs left out of status.summary.externalURLs (controller/summary.ts); the UI reads it too",
  ),
  e('argocd.argoproj.io/managed-by-url', 'the UI'),
];

export const HOOK_RULES: readonly FieldRule[] = [
  ...['PreSync', 'Sync', 'PostSync', 'SyncFail', 'Skip', 'HookSucceeded', 'HookFailed', 'BeforeHookCreation'].map((t) =>
    h(t, 'sync/hooks.ts'),
  ),
  h('PreDelete', 'controller/delete-hooks.ts, run before any resource is deleted'),
  h('PostDelete', 'controller/delete-hooks.ts, run after the resources are deleted'),
];

export const FINALIZER_RULES: readonly FieldRule[] = [
  h('resources-finalizer.argocd.argoproj.io', 'controller/finalizer.ts, foreground'),
  h('resources-finalizer.argocd.argoproj.io/foreground', 'controller/finalizer.ts'),
  h('resources-finalizer.argocd.argoproj.io/background', 'controller/finalizer.ts'),
  h('post-delete-finalizer.argocd.argoproj.io', 'controller/delete-hooks.ts'),
  h('post-delete-finalizer.argocd.argoproj.io/cleanup', 'controller/delete-hooks.ts'),
  h('pre-delete-finalizer.argocd.argoproj.io', 'controller/delete-hooks.ts'),
  h('pre-delete-finalizer.argocd.argoproj.io/cleanup', 'controller/delete-hooks.ts'),
];

export const CLUSTER_SECRET_RULES: readonly FieldRule[] = [
  h('data.name', 'api/cluster.ts'),
  h('data.server', 'api/cluster.ts'),
  h('data.config.bearerToken', 'kube/credentials.ts'),
  h('data.config.username', 'kube/credentials.ts'),
  h('data.config.password', 'kube/credentials.ts'),
  h('data.config.tlsClientConfig', 'kube/credentials.ts'),
  h('data.namespaces', 'namespace-scoped clusters (project/clusters.ts, controller/limits.ts)'),
  h('data.clusterResources', 'namespace-scoped clusters (project/clusters.ts, controller/limits.ts)'),
  h('data.project', 'project-scoped clusters (project/clusters.ts, controller/admission.ts)'),
  // Argo CD's controller shards clusters across replicas by it; impersync shards Applications by a
  // hash of their namespace/name (controller/shards.ts), so the field picks no replica.
  w(
    'data.shard',
    'impersync shards Applications by a hash of their namespace/name, not clusters: this picks no replica',
  ),
  h('data.config.awsAuthConfig', 'argocd-k8s-auth aws, run from PATH as an exec plugin (kube/credentials.ts)'),
  h('data.config.execProviderConfig', 'run by the controller as client-go runs it (kube/exec-credential.ts)'),
  r(
    'data.config.proxyUrl',
    'Argo CD connects through it; the Application is refused at admission and no credential is built, so the cluster is not reached directly (api/cluster.ts refusedClusterConfig)',
  ),
  h(
    'data.config.disableCompression',
    'no Accept-Encoding is sent, as client-go with it: the transport never asks for compression (kube/transport.ts)',
  ),
];

/**
 * Keys of repository Secrets and credential templates (api/repository.ts parseRepositorySecret),
 * as a repository the Application uses sets them. The fixture lists the JSON names of Argo CD's
 * repository types (repository_types.go), some of which are not Secret keys at all.
 */
export const REPOSITORY_SECRET_RULES: readonly FieldRule[] = [
  ...['url', 'project'].map((k) => h(`data.${k}`, 'which Secret a repoURL gets (repository/access.ts)')),
  h('data.type', 'git, helm or oci (repository/access.ts, source/charts.ts)'),
  h('data.name', "what a chart dependency's `@name` refers to (repository/access.ts)"),
  ...['username', 'password', 'bearerToken', 'sshPrivateKey', 'tlsClientCertData', 'tlsClientCertKey'].map((k) =>
    h(`data.${k}`, 'credentials of the render request (repository/access.ts, source/credentials.ts)'),
  ),
  ...['insecure', 'insecureIgnoreHostKey', 'forceHttpBasicAuth', 'proxy', 'noProxy'].map((k) =>
    h(
      `data.${k}`,
      'how the renderer reaches the repository (repository/access.ts, source/credentials.ts, source/http.ts)',
    ),
  ),
  ...['enableOCI', 'insecureOCIForceHttp'].map((k) =>
    h(`data.${k}`, 'OCI registries (source/charts.ts, source/oci.ts)'),
  ),
  ...[
    'githubAppPrivateKey',
    'githubAppID',
    'githubAppInstallationID',
    'githubAppEnterpriseBaseUrl',
    'gcpServiceAccountKey',
    'useAzureWorkloadIdentity',
    'azureServicePrincipalClientId',
    'azureServicePrincipalClientID',
    'azureServicePrincipalClientSecret',
    'azureServicePrincipalTenantId',
    'azureServicePrincipalTenantID',
    'azureActiveDirectoryEndpoint',
    'enableLfs',
  ].map((k) =>
    r(
      `data.${k}`,
      'a render using the repository fails with a ComparisonError naming the Secret and field (api/repository.ts)',
    ),
  ),
  r(
    'data.depth',
    'Argo CD fetches shallow (--depth) when it is above 0; a render using the repository fails with a ComparisonError naming the Secret and field (api/repository.ts)',
  ),
  e('data.webhookManifestCacheWarmDisabled', "the manifest cache warming of Argo CD's Git webhook"),
  ...['connectionState', 'inheritedCreds'].map((k) =>
    e(`data.${k}`, "not a Secret key: the repository's state as Argo CD's API server shows it"),
  ),
  ...['keyData', 'fingerprint', 'owner', 'trust', 'subType', 'metadata'].map((k) =>
    e(`data.${k}`, "not a Secret key: GnuPG keys and certificates of Argo CD's API server"),
  ),
];

/** The first rule matching `path` (angle-bracket placeholders match any text; `.**` any depth). */
export function ruleFor(rules: readonly FieldRule[], path: string): FieldRule | undefined {
  return rules.find((rule) => {
    if (rule.pattern.endsWith('.**')) {
      const prefix = rule.pattern.slice(0, -3);
      return path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`);
    }
    if (!rule.pattern.includes('<')) return rule.pattern === path;
    const re = new RegExp(`^${rule.pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/<[^>]+>/g, '.+')}$`);
    return re.test(path);
  });
}
