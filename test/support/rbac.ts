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

/** The groups the API server gives a subject: a ServiceAccount's own, or the one group named. */
function reviewIdentity(subject: Subject): { user: string; groups: string[] } {
  if (subject !== 'controller' && 'group' in subject)
    return { user: 'impersync-test-member', groups: [subject.group, 'system:authenticated'] };
  if (subject !== 'controller' && 'serviceAccount' in subject)
    return {
      user: userNameOf(subject),
      groups: ['system:serviceaccounts', `system:serviceaccounts:${subject.namespace}`, 'system:authenticated'],
    };
  return { user: userNameOf(subject), groups: ['system:authenticated'] };
}

type Attributes =
  { resourceAttributes: Record<string, string> } | { nonResourceAttributes: { path: string; verb: string } };

/**
 * Asks the API server's authorizer, as a SubjectAccessReview, until it answers `allowed`, or the
 * deadline passes. RBAC takes effect once the server's cache has seen a Role and its binding, a
 * moment after the write was answered and longer on a loaded machine.
 */
async function untilReviewed(
  kc: KubeConfig,
  subject: Subject,
  attributes: Attributes,
  allowed: boolean,
  timeoutMs: number,
): Promise<void> {
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: { ...reviewIdentity(subject), ...attributes },
  };
  const end = Date.now() + timeoutMs;
  for (;;) {
    const answer = (await requestOk(kc, {
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: review,
    })) as { status?: { allowed?: boolean } };
    if ((answer.status?.allowed === true) === allowed) return;
    if (Date.now() > end)
      throw new Error(
        `${review.spec.user} is ${allowed ? 'still refused' : 'still allowed'} ${JSON.stringify(attributes)} after ${timeoutMs} ms`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Waits until the API server's authorizer refuses the ServiceAccount `verb` on `resource` (of the
 * core group) in its namespace: a deleted RoleBinding takes effect once the server's RBAC cache has
 * seen the deletion. A test that asserts what the ServiceAccount can no longer do waits for that
 * moment first.
 */
export async function untilRefused(
  kc: KubeConfig,
  subject: { serviceAccount: string; namespace: string },
  verb: string,
  resource: string,
  timeoutMs = 30_000,
): Promise<void> {
  const attributes = { resourceAttributes: { namespace: subject.namespace, verb, group: '', resource } };
  await untilReviewed(kc, subject, attributes, false, timeoutMs);
}

/** One request each rule allows: its first verb, group, resource (and subresource) and name; `*` stands for any. */
function allowedBy(rule: PolicyRule, namespace: string | undefined): Attributes {
  const any = (v: string | undefined) => (v === undefined || v === '*' ? 'impersync-any' : v);
  const verb = rule.verbs[0] === '*' ? 'get' : (rule.verbs[0] ?? 'get');
  const url = rule.nonResourceURLs?.[0];
  if (url !== undefined) return { nonResourceAttributes: { path: url.replace(/\*$/, 'any'), verb } };
  // The subresource is all after the first "/": userextras/impersync.io/application.
  const [resource = 'impersync-any', ...sub] = any(rule.resources?.[0]).split('/');
  const subresource = sub.join('/');
  const group = rule.apiGroups?.[0] === '*' ? 'impersync-any' : (rule.apiGroups?.[0] ?? '');
  return {
    resourceAttributes: {
      verb,
      group,
      resource,
      ...(subresource ? { subresource } : {}),
      ...(namespace ? { namespace } : {}),
      ...(rule.resourceNames?.[0] ? { name: rule.resourceNames[0] } : {}),
    },
  };
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
  // The grant is in effect when this returns: a test that uses it at once would otherwise race the
  // server's RBAC cache (CI saw an impersonation refused right after its Role was bound).
  for (const subject of Array.isArray(grant.to) ? grant.to : [grant.to])
    for (const rule of grant.rules) await untilReviewed(kc, subject, allowedBy(rule, grant.namespace), true, 30_000);
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
  opts: { getServiceAccounts?: boolean; to?: Subject } = {},
): Promise<void> {
  await createNamespace(kc, namespace);
  const to = opts.to ?? 'controller';
  await grantRole(kc, {
    name: 'impersync-controller',
    namespace,
    to,
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
        resourceNames: [
          'argocd-cm',
          'argocd-cmd-params-cm',
          'argocd-ssh-known-hosts-cm',
          'argocd-tls-certs-cm',
          'argocd-gpg-keys-cm',
        ],
        verbs: ['get', 'list', 'watch'],
      },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      // Whether Argo CD's application controller runs here (controller/argocd-controller.ts).
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
    ],
  });
  await grantImpersonation(kc, {
    name: 'impersync-impersonate',
    to,
    verbs: opts.getServiceAccounts === false ? ['impersonate'] : ['impersonate', 'get'],
  });
}
