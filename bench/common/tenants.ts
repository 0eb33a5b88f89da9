// The benchmark's tenants: per Application a namespace, a `deployer` ServiceAccount with a Role on
// exactly the five kinds it deploys, and five manifests (ConfigMap, Secret, Service, Deployment,
// ServiceAccount). The Service is headless: the harness's service range is a /24, too small for
// hundreds of ClusterIPs. The same YAML text goes to Git (for impersync), to disk (for kubectl)
// and, parsed, to the minimal client, so all three apply identical objects.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { applyRaw, type KubeObject, type TestControlPlane } from '../../test/support/index.ts';
import { mapLimit } from '../../src/sync/util.ts';

export const DEPLOYER = 'deployer';

export function appName(prefix: string, i: number): string {
  return `${prefix}${String(i).padStart(4, '0')}`;
}

/** The five manifests of one Application, without namespace (the destination supplies it). */
export function manifestFiles(name: string, version = 'v1'): Record<string, string> {
  const b64 = Buffer.from(`secret-of-${name}`).toString('base64');
  return {
    'configmap.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels:\n    app: ${name}\ndata:\n  version: "${version}"\n  greeting: hello from ${name}\n`,
    'secret.yaml': `apiVersion: v1\nkind: Secret\nmetadata:\n  name: credentials\n  labels:\n    app: ${name}\ntype: Opaque\ndata:\n  password: ${b64}\n`,
    'service.yaml': `apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  labels:\n    app: ${name}\nspec:\n  clusterIP: None\n  selector:\n    app: ${name}\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n    protocol: TCP\n`,
    'deployment.yaml': `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app: ${name}\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: ${name}\n  template:\n    metadata:\n      labels:\n        app: ${name}\n    spec:\n      serviceAccountName: runtime\n      containers:\n      - name: web\n        image: registry.invalid/web:1.0\n        ports:\n        - containerPort: 8080\n`,
    'serviceaccount.yaml': `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: runtime\n  labels:\n    app: ${name}\n`,
  };
}

/** The same manifests as objects in `namespace`, parsed as YAML 1.1 like kubectl. */
export function manifestObjects(name: string, namespace: string, version = 'v1'): KubeObject[] {
  return Object.values(manifestFiles(name, version)).flatMap((text) =>
    parseAllDocuments(text, { version: '1.1' }).map((d) => {
      const o = d.toJSON() as KubeObject;
      o.metadata.namespace = namespace;
      return o;
    }),
  );
}

/** Writes each Application's manifests to <root>/<name>/ (a Git work tree or a kubectl folder). */
export async function writeManifests(root: string, names: string[], version = 'v1'): Promise<void> {
  for (const name of names) {
    const dir = path.join(root, name);
    await mkdir(dir, { recursive: true });
    for (const [file, text] of Object.entries(manifestFiles(name, version)))
      await writeFile(path.join(dir, file), text);
  }
}

const ALL_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
/** The five kinds of manifestFiles(). */
export const TENANT_RULES = [
  { apiGroups: [''], resources: ['configmaps', 'secrets', 'services', 'serviceaccounts'], verbs: ALL_VERBS },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ALL_VERBS },
];

/** Namespace `ns`, ServiceAccount `deployer`, a Role with `rules` and its RoleBinding. */
export async function createTenant(cp: TestControlPlane, ns: string, rules: unknown[] = TENANT_RULES): Promise<void> {
  const m = { fieldManager: 'bench-setup' };
  await applyRaw(cp.admin, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, m);
  await applyRaw(
    cp.admin,
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DEPLOYER, namespace: ns } },
    m,
  );
  await applyRaw(
    cp.admin,
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: DEPLOYER, namespace: ns }, rules },
    m,
  );
  await applyRaw(
    cp.admin,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: DEPLOYER, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: DEPLOYER },
      subjects: [{ kind: 'ServiceAccount', name: DEPLOYER, namespace: ns }],
    },
    m,
  );
}

/** A tenant (createTenant) for each name, 8 at a time. */
export async function createTenants(cp: TestControlPlane, names: string[]): Promise<void> {
  await mapLimit(names, 8, (ns) => createTenant(cp, ns));
}

export function deployerUser(namespace: string): string {
  return `system:serviceaccount:${namespace}:${DEPLOYER}`;
}
