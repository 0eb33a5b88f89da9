// Setting up tenants on the test API server: namespaces, ServiceAccounts, Roles and bindings, and
// the controller's right to impersonate. All are server-side applies, so calling twice is harmless.
import type { KubeConfig } from '@kubernetes/client-node';
import { controllerUser } from '../../src/controlplane/identities.ts';
import { EXTRA_KEYS, serviceAccountToUser } from '../../src/api/index.ts';
import type { KubeObject } from './kube.ts';
import { applyRaw, requestOk } from './kube.ts';

/** Who a binding grants to. 'controller' is the harness's controller identity (impersync-controller). */
export type Subject =
  'controller' | { user: string } | { group: string } | { serviceAccount: string; namespace: string };

export type PolicyRule = {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
};

export const controllerUserName = controllerUser.name;

/** The Kubernetes user name of a subject (ServiceAccounts: system:serviceaccount:<ns>:<name>). */
export function userNameOf(subject: Exclude<Subject, { group: string }>): string {
  if (subject === 'controller') return controllerUserName;
  if ('user' in subject) return subject.user;
  return serviceAccountToUser({ namespace: subject.namespace, name: subject.serviceAccount });
}

function rbacSubject(subject: Subject): Record<string, string> {
  if (subject === 'controller')
    return { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: controllerUserName };
  if ('user' in subject) return { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: subject.user };
  if ('group' in subject) return { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: subject.group };
  return { kind: 'ServiceAccount', name: subject.serviceAccount, namespace: subject.namespace };
}

const manager = { fieldManager: 'impersync-test-setup' };

export async function createNamespace(
  kc: KubeConfig,
  name: string,
  opts: { labels?: Record<string, string> } = {},
): Promise<KubeObject> {
  return applyRaw(
    kc,
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name, ...(opts.labels ? { labels: opts.labels } : {}) } },
    manager,
  );
}

export async function createServiceAccount(kc: KubeConfig, namespace: string, name: string): Promise<KubeObject> {
  return applyRaw(kc, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } }, manager);
}

/**
 * Waits until the API server's authorizer refuses the ServiceAccount `verb` on `resource` (of the
 * core group) in its namespace. A deleted RoleBinding takes effect once the server's RBAC cache has
 * seen the deletion, a moment after the DELETE was answered and longer on a loaded machine: a test
 * that asserts what the ServiceAccount can no longer do waits for that moment first.
 */
export async function untilRefused(
  kc: KubeConfig,
  subject: { serviceAccount: string; namespace: string },
  verb: string,
  resource: string,
  timeoutMs = 30_000,
): Promise<void> {
  const { namespace } = subject;
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user: userNameOf(subject),
      // The groups the API server gives an impersonated ServiceAccount.
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
      resourceAttributes: { namespace, verb, group: '', resource },
    },
  };
  const end = Date.now() + timeoutMs;
  for (;;) {
    const answer = (await requestOk(kc, {
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: review,
    })) as { status?: { allowed?: boolean } };
    if (answer.status?.allowed !== true) return;
    if (Date.now() > end) throw new Error(`${review.spec.user} may still ${verb} ${resource} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export type Grant = {
  /** Name of the Role/ClusterRole and of its binding. */
  name: string;
  /** A Role and RoleBinding in this namespace; without it, a ClusterRole and ClusterRoleBinding. */
  namespace?: string;
  rules: PolicyRule[];
  to: Subject | Subject[];
};

/** Creates a Role (or ClusterRole) with `rules` and binds it to the subjects. */
export async function grantRole(kc: KubeConfig, grant: Grant): Promise<void> {
  const subjects = (Array.isArray(grant.to) ? grant.to : [grant.to]).map(rbacSubject);
  const namespaced = grant.namespace !== undefined;
  const metadata = namespaced ? { name: grant.name, namespace: grant.namespace } : { name: grant.name };
  const rbac = 'rbac.authorization.k8s.io/v1';
  await applyRaw(
    kc,
    { apiVersion: rbac, kind: namespaced ? 'Role' : 'ClusterRole', metadata, rules: grant.rules },
    manager,
  );
  await applyRaw(
    kc,
    {
      apiVersion: rbac,
      kind: namespaced ? 'RoleBinding' : 'ClusterRoleBinding',
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: namespaced ? 'Role' : 'ClusterRole', name: grant.name },
      subjects,
    },
    manager,
  );
}

/** `impersonate` on impersync's user extras (deploy/install/base/extras.yaml), cluster-wide as the API server asks. */
export const EXTRAS_RULE: PolicyRule = {
  apiGroups: ['authentication.k8s.io'],
  resources: EXTRA_KEYS.map((k) => `userextras/${k}`),
  verbs: ['impersonate'],
};

/**
 * Lets `to` impersonate ServiceAccounts: only the listed ones (RBAC resourceNames, one Role per
 * namespace, as the design recommends), or every ServiceAccount when `serviceAccounts` is omitted.
 * `verbs` replaces `['impersonate']` (the install grants `['impersonate', 'get']`: the controller
 * checks that a ServiceAccount exists before syncing as it). As the install does, it also lets
 * `to` impersonate impersync's user extras (ClusterRole `<name>-extras`), unless `extras: false`.
 */
export async function grantImpersonation(
  kc: KubeConfig,
  opts: {
    name: string;
    to?: Subject;
    serviceAccounts?: { namespace: string; name: string }[];
    verbs?: string[];
    extras?: boolean;
  },
): Promise<void> {
  const to = opts.to ?? 'controller';
  const verbs = opts.verbs ?? ['impersonate'];
  if (opts.extras !== false) await grantRole(kc, { name: `${opts.name}-extras`, to, rules: [EXTRAS_RULE] });
  if (opts.serviceAccounts === undefined) {
    await grantRole(kc, { name: opts.name, to, rules: [{ apiGroups: [''], resources: ['serviceaccounts'], verbs }] });
    return;
  }
  const byNamespace = new Map<string, string[]>();
  for (const sa of opts.serviceAccounts)
    byNamespace.set(sa.namespace, [...(byNamespace.get(sa.namespace) ?? []), sa.name]);
  for (const [namespace, names] of byNamespace) {
    await grantRole(kc, {
      name: opts.name,
      namespace,
      to,
      rules: [{ apiGroups: [''], resources: ['serviceaccounts'], verbs, resourceNames: names }],
    });
  }
}

/**
 * The controller's rights in its own namespace (deploy/install/base/role.yaml), and impersonate and
 * get on ServiceAccounts (the ClusterRole of deploy/install/base/impersonate.yaml). The harness binds
 * that ClusterRole cluster-wide, the install's opt-in shape, since its tests create tenants as they
 * go; the install binds it per tenant namespace (deploy/install/tenants). `getServiceAccounts: false`
 * leaves out the get, as a custom install might (the ServiceAccount check then cannot run).
 */
export async function grantInstalledControllerRights(
  kc: KubeConfig,
  namespace: string,
  opts: { getServiceAccounts?: boolean } = {},
): Promise<void> {
  await createNamespace(kc, namespace);
  await grantRole(kc, {
    name: 'impersync-controller',
    namespace,
    to: 'controller',
    rules: [
      {
        apiGroups: ['argoproj.io'],
        resources: ['applications'],
        verbs: ['get', 'list', 'watch', 'update', 'patch'],
      },
      {
        apiGroups: ['argoproj.io'],
        resources: ['applications/status', 'applications/finalizers'],
        verbs: ['get', 'update', 'patch'],
      },
      // AppProjects are only read.
      { apiGroups: ['argoproj.io'], resources: ['appprojects'], verbs: ['get', 'list', 'watch'] },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['argocd-cm', 'argocd-ssh-known-hosts-cm', 'argocd-tls-certs-cm'],
        verbs: ['get', 'list', 'watch'],
      },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ],
  });
  await grantImpersonation(kc, {
    name: 'impersync-impersonate',
    verbs: opts.getServiceAccounts === false ? ['impersonate'] : ['impersonate', 'get'],
  });
}
