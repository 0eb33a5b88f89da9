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
  ['version', 'Helm 3, the only Helm Argo CD 3 runs'],
];
const KUSTOMIZE_HONOURED = [
  'namePrefix',
  'nameSuffix',
  'images[]',
  'commonLabels',
  'commonAnnotations',
  'commonAnnotationsEnvsubst',
  'namespace',
  'version',
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
    r(`${prefix}.directory.**`, 'other directory fields (jsonnet) are refused by the renderer (source/render.ts)'),
    ...HELM_HONOURED.map(([f, note]) => h(`${prefix}.helm.${f}`, note)),
    r(`${prefix}.helm.**`, 'other helm fields are refused by the renderer (source/helm.ts)'),
    ...KUSTOMIZE_HONOURED.map((f) => h(`${prefix}.kustomize.${f}`, 'kustomize edits (source/kustomize.ts)')),
    r(`${prefix}.kustomize.**`, 'other kustomize fields are refused by the renderer (source/kustomize.ts)'),
    h(`${prefix}.plugin.**`, 'config management plugins, through their argocd-cmp-server sidecars (source/cmp/)'),
    multi
      ? h(`${prefix}.ref`, 'a ref source for `$ref/...` value files, its revision resolved (controller/render.ts)')
      : w(`${prefix}.ref`, 'a ref has meaning only among spec.sources'),
    w(`${prefix}.tagPrefix`, 'tag prefixes are not read'),
    e(`${prefix}.name`, 'a display name for the UI'),
  ];
}

export const APPLICATION_RULES: readonly FieldRule[] = [
  h('spec.project', 'admission (controller/admission.ts)'),
  h('spec.destination.**', 'admission, the destination cluster and namespace'),
  ...sourceRules('spec.source', false),
  // Multi-source Applications: each source rendered in its own request (controller/render.ts).
  ...sourceRules('spec.sources[]', true),
  w('spec.sourceHydrator.**', 'the source hydrator is not run'),
  h('spec.syncPolicy.automated.**', 'automated sync (controller/operation-policy.ts)'),
  h('spec.syncPolicy.syncOptions[]', 'each option: sync/options.ts (those it does not act on are warned by name)'),
  h('spec.syncPolicy.retry.limit', 'retry (controller/operation-policy.ts)'),
  h('spec.syncPolicy.retry.backoff.**', 'retry backoff (controller/operation-policy.ts)'),
  w('spec.syncPolicy.retry.refresh', 'a retry does not re-resolve the revision'),
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
  w('operation.sync.manifests[]', 'local manifests (argocd app sync --local) are not applied'),
  w('operation.sync.autoHealAttemptsCount', 'self-heal attempts are not counted'),
  h('operation.initiatedBy.**', 'manual or automated (sync windows, history)'),
  h('operation.retry.limit', 'retry'),
  h('operation.retry.backoff.**', 'retry backoff'),
  w('operation.retry.refresh', 'a retry does not re-resolve the revision'),
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
  w('spec.permitOnlyProjectScopedClusters', 'project-scoped clusters are not read'),
  w('spec.signatureKeys[].**', 'commit signatures are not verified'),
  w('spec.sourceIntegrity.**', 'commit signatures are not verified'),
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
  w('resource.customizations.knownTypeFields.<group_kind>', 'known type fields are not normalized'),
  e('resource.customizations.actions.<group_kind>', "resource actions run from Argo CD's UI and CLI"),
  w('timeout.reconciliation.jitter', 'the refresh jitter is fixed'),
  w('timeout.hard.reconciliation', 'there is no periodic hard refresh'),
  w('kustomize.buildOptions.<version>', 'one kustomize version'),
  w('kustomize.path.<version>', 'one kustomize version'),
  w('kustomize.version.<version>', 'one kustomize version'),
  w('kustomize.enable', 'source types cannot be turned off'),
  w('helm.enable', 'source types cannot be turned off'),
  w('jsonnet.enable', 'jsonnet is not rendered'),
  w('helm.valuesFileSchemes', 'value files are read from the repository or a ref source only; a URL is refused'),
  w('application.allowedNodeLabels', 'node labels are not read'),
  w('cluster.inClusterEnabled', 'the in-cluster destination cannot be turned off'),
  w('resource.respectRBAC', 'the identity\u2019s own RBAC decides what it may read'),
  w('application.sync.requireOverridePrivilegeForRevisionSync', "Argo CD's API server RBAC"),
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
    'SkipDryRunOnMissingResource=true',
    'Validate=false',
  ].map((o) => h(o, 'sync/options.ts')),
  w('ServerSideApply=false', 'impersync always applies server-side'),
];

export const COMPARE_OPTION_RULES: readonly FieldRule[] = [
  h('IgnoreExtraneous', 'sync/compare.ts'),
  h('ServerSideDiff=true', 'impersync always diffs server-side'),
  w('ServerSideDiff=false', 'impersync always diffs server-side, with a dry-run apply'),
  h('IncludeMutationWebhook=true', "the dry-run apply's answer includes what mutating webhooks do"),
];

export const ANNOTATION_RULES: readonly FieldRule[] = [
  h('argocd.argoproj.io/sync-options', 'sync/options.ts'),
  h('argocd.argoproj.io/sync-wave', 'sync/order.ts'),
  h('argocd.argoproj.io/hook', 'sync/hooks.ts'),
  h('argocd.argoproj.io/hook-delete-policy', 'sync/hooks.ts'),
  h('argocd.argoproj.io/hook-finalizer', 'sync/health/builtin.ts'),
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
  w('argocd.argoproj.io/refresh-timestamp', 'a refresh is asked for by argocd.argoproj.io/refresh'),
  w('argocd.argoproj.io/hydrate', 'the source hydrator is not run'),
  w('argocd.argoproj.io/hydrate-timestamp', 'the source hydrator is not run'),
  w('argocd.argoproj.io/manifest-generate-paths', 'there is no Git webhook'),
  w('argocd.argoproj.io/kubernetes-version', 'the destination version is read from the destination'),
  e('argocd.argoproj.io/application-set-refresh', 'ApplicationSets'),
  e('argocd.argoproj.io/auto-label-cluster-info', "Argo CD's cluster Secret labels"),
  e('argocd.argoproj.io/ignore-default-links', 'the UI'),
  e('argocd.argoproj.io/managed-by-url', 'the UI'),
];

export const HOOK_RULES: readonly FieldRule[] = [
  ...['PreSync', 'Sync', 'PostSync', 'SyncFail', 'Skip', 'HookSucceeded', 'HookFailed', 'BeforeHookCreation'].map((t) =>
    h(t, 'sync/hooks.ts'),
  ),
  w('PreDelete', 'PreDelete hooks are not run when the Application is deleted'),
  h('PostDelete', 'controller/post-delete.ts, run after the resources are deleted'),
];

export const FINALIZER_RULES: readonly FieldRule[] = [
  h('resources-finalizer.argocd.argoproj.io', 'controller/finalizer.ts, foreground'),
  h('resources-finalizer.argocd.argoproj.io/foreground', 'controller/finalizer.ts'),
  h('resources-finalizer.argocd.argoproj.io/background', 'controller/finalizer.ts'),
  h('post-delete-finalizer.argocd.argoproj.io', 'controller/post-delete.ts'),
  h('post-delete-finalizer.argocd.argoproj.io/cleanup', 'controller/post-delete.ts'),
  w('pre-delete-finalizer.argocd.argoproj.io', 'PreDelete hooks are not run'),
];

export const CLUSTER_SECRET_RULES: readonly FieldRule[] = [
  h('data.name', 'api/cluster.ts'),
  h('data.server', 'api/cluster.ts'),
  h('data.config.bearerToken', 'kube/credentials.ts'),
  h('data.config.username', 'kube/credentials.ts'),
  h('data.config.password', 'kube/credentials.ts'),
  h('data.config.tlsClientConfig', 'kube/credentials.ts'),
  w('data.namespaces', 'namespace-scoped clusters are not supported'),
  w('data.clusterResources', 'namespace-scoped clusters are not supported'),
  w('data.project', 'project-scoped clusters are not supported'),
  w('data.shard', 'there is no sharding'),
  w('data.config.awsAuthConfig', 'AWS authentication is not supported'),
  w('data.config.execProviderConfig', 'exec credential plugins are not run'),
  w('data.config.proxyUrl', 'no proxy is used'),
  w('data.config.disableCompression', 'compression is the transport default'),
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
  w('data.depth', 'clones are not shallow; the commit rendered is the same'),
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
