/**
 * The test harness: a real Kubernetes control plane (etcd + kube-apiserver +
 * kube-controller-manager) for every test that talks to Kubernetes. This file is its stable API;
 * import from '../support/index.ts' only.
 *
 * Start one per test file (about 5-10 s) and stop it in after():
 *
 *   import { after, before, test } from 'node:test';
 *   import { startControlPlane, createNamespace, applyRaw, type TestControlPlane } from '../support/index.ts';
 *
 *   let cp: TestControlPlane;
 *   before(async () => { cp = await startControlPlane(); });
 *   after(() => cp?.stop());
 *
 * A second call gives a second, independent instance (a remote cluster stand-in).
 *
 * What a control plane has:
 * - `cp.server` (https://127.0.0.1:<port>), `cp.caPem` (the CA its serving certificate is signed
 *   with; kubeconfigs verify TLS with it), `cp.dir` (kubeconfigs, audit.log, logs/).
 * - RBAC authorization, ServiceAccount tokens (issuer https://kubernetes.default.svc.cluster.local),
 *   static-token identities: `cp.admin` (KubeConfig, user impersync-admin, group system:masters)
 *   and `cp.controller` (user impersync-controller, NO rights until a test grants them). Extra
 *   users: startControlPlane({ users: [{ name: 'alice', groups: ['team-a'] }] }).
 * - `cp.kubeconfigFor(identity, { impersonate? })` -> KubeConfig; `cp.kubeconfigFileFor(...)` ->
 *   a file path; `cp.tokenFor(identity)` -> bearer token. identity: 'admin' | 'controller' |
 *   { user } | { serviceAccount, namespace } (TokenRequest; the ServiceAccount must exist).
 * - The CRDs of deploy/crds/ (Application, AppProject) installed and Established.
 * - An audit log of every request at Metadata level: `cp.readAudit()` / `cp.waitForAudit(pred)`
 *   return AuditRecord {user, impersonatedUser, impersonatedExtra, verb, resource, subresource,
 *   namespace, name, code, dryRun, fieldManager, decision, requestURI, ...}. Prefer waitForAudit:
 *   the server may write the line a moment after answering.
 * - stop() fails the file when a request impersync made as a ServiceAccount did not name its
 *   Application, project and revision in impersonatedUser.extra (support/attribution.ts;
 *   startControlPlane({ attributionExempt }) leaves out what a test withholds on purpose).
 * - kube-controller-manager: namespaces finish deleting, owner references cascade, Deployments get
 *   ReplicaSets, token Secrets are filled. No nodes, kubelets or running pods.
 *
 * Requests (all take a KubeConfig and, where it makes sense, `asUser` for Impersonate-User):
 * - applyRaw(kc, obj, { fieldManager, dryRun, force, asUser }) server-side apply of an untyped
 *   object; getRaw / listRaw / deleteRaw; request(kc, {method, path, body}) for anything else.
 *   Non-2xx answers throw ApiError { status, reason, message (the API server's own message) }.
 * - createNamespace, createServiceAccount, grantRole({ name, namespace?, rules, to }),
 *   grantImpersonation({ name, to?, serviceAccounts? }) (resourceNames-limited when listed).
 *
 * Binaries: found by scripts/control-plane-binaries (KUBEBUILDER_ASSETS, else a cached build,
 * else a build with Go that takes minutes once). When none can be had, startControlPlane() throws
 * an error that says how to get them, so the tests fail rather than skip.
 *
 * Processes never outlive the test process: stop() ends them, and exit, SIGINT/SIGTERM or even
 * SIGKILL of the test process kill them too. IMPERSYNC_KEEP_CONTROL_PLANE=1 keeps the folder
 * after stop() for inspection.
 */
export { startControlPlane } from './controlplane.ts';
export type { HarnessOptions, Identity, KubeconfigOptions, TestControlPlane } from './controlplane.ts';
export { attributed, madeForTest, unattributedRequests } from './attribution.ts';
export {
  ApiError,
  applyRaw,
  deleteRaw,
  getRaw,
  labelNode,
  listRaw,
  pathFor,
  request,
  requestOk,
  resourceFor,
  WIDGET_CRD,
} from './kube.ts';
export type { ApplyOptions, As, KubeObject, ObjectRef, RawRequest } from './kube.ts';
export {
  controllerUserName,
  createNamespace,
  createServiceAccount,
  EXTRAS_RULE,
  grantImpersonation,
  grantInstalledControllerRights,
  grantRole,
  untilRefused,
  userNameOf,
} from './rbac.ts';
export type { Grant, PolicyRule, Subject } from './rbac.ts';
export { parseYamlDocuments, readYamlFile } from './yaml.ts';
export { readAudit, waitForAudit } from '../../src/controlplane/audit.ts';
export type { AuditRecord } from '../../src/controlplane/audit.ts';
export type { ControlPlaneOptions } from '../../src/controlplane/controlplane.ts';
export { crdDir } from '../../src/controlplane/crds.ts';
