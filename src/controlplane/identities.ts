// Who can talk to the local API server, and the files that say so: a static token file
// (kube-apiserver --token-auth-file) and one kubeconfig per identity. Tokens are random per
// instance; kubeconfigs verify the server with the CA the API server generated at start.
import { randomBytes } from 'node:crypto';
import { stringify } from 'yaml';

export type StaticUser = {
  /** Kubernetes user name, e.g. 'impersync-controller'. */
  name: string;
  /** Groups besides system:authenticated (which the API server always adds). */
  groups?: string[];
};

export type TokenUser = StaticUser & { token: string; uid: string };

/** The admin: full rights through the system:masters group. */
export const adminUser: StaticUser = { name: 'impersync-admin', groups: ['system:masters'] };
/** The controller identity: no rights at all until a test or an operator grants them. */
export const controllerUser: StaticUser = { name: 'impersync-controller' };
/**
 * kube-controller-manager's identity. It runs every controller with its own credential
 * (--use-service-account-credentials=false), so it needs broad rights: system:masters.
 */
export const controllerManagerUser: StaticUser = { name: 'system:kube-controller-manager', groups: ['system:masters'] };

const userName = /^[^\s,"]+$/;

export function withTokens(users: StaticUser[]): TokenUser[] {
  const seen = new Set<string>();
  return users.map((user, i) => {
    if (!userName.test(user.name)) {
      throw new Error(`user name ${JSON.stringify(user.name)} must be non-empty and have no spaces, commas or quotes`);
    }
    for (const group of user.groups ?? []) {
      if (!userName.test(group))
        throw new Error(
          `group ${JSON.stringify(group)} of user ${user.name} must be non-empty and have no spaces, commas or quotes`,
        );
    }
    if (seen.has(user.name)) throw new Error(`user ${user.name} is listed twice`);
    seen.add(user.name);
    return { ...user, token: randomBytes(24).toString('hex'), uid: `static-${i}` };
  });
}

/** kube-apiserver's static token file: token,user,uid,"group1,group2" per line. */
export function tokenFile(users: TokenUser[]): string {
  return (
    users
      .map((u) => {
        const groups = u.groups ?? [];
        return groups.length > 0
          ? `${u.token},${u.name},${u.uid},"${groups.join(',')}"`
          : `${u.token},${u.name},${u.uid}`;
      })
      .join('\n') + '\n'
  );
}

export type KubeconfigInput = {
  server: string;
  caPem: string;
  /** Context and user name inside the file. */
  name: string;
  token: string;
  /** Sets the `as` field: every request carries Impersonate-User. */
  impersonate?: string;
  namespace?: string;
};

export function kubeconfigYaml(input: KubeconfigInput): string {
  const user: Record<string, string> = { token: input.token };
  if (input.impersonate) user['as'] = input.impersonate;
  const context: Record<string, string> = { cluster: 'impersync-local', user: input.name };
  if (input.namespace) context['namespace'] = input.namespace;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'impersync-local',
        cluster: { server: input.server, 'certificate-authority-data': Buffer.from(input.caPem).toString('base64') },
      },
    ],
    users: [{ name: input.name, user }],
    contexts: [{ name: input.name, context }],
    'current-context': input.name,
  });
}

/** Audit policy: every request at Metadata level (who, as whom, what, result; no bodies). */
export const auditPolicyYaml = stringify({
  apiVersion: 'audit.k8s.io/v1',
  kind: 'Policy',
  omitStages: ['RequestReceived'],
  rules: [{ level: 'Metadata' }],
});
