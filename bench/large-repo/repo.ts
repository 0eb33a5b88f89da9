// The large repository's side of the benchmark: N ConfigMaps in files of 100 (as a big monorepo
// folder holds them, and as test/e2e/bad-input.test.ts builds its 10,000), and the tenant that
// deploys them: a namespace, a `deployer` ServiceAccount and a Role on configmaps only. The same
// YAML text goes to Git (for impersync) and, parsed, to the minimal client.
import { parseAllDocuments } from 'yaml';
import type { KubeObject, TestControlPlane } from '../../test/support/index.ts';
import { createTenant } from '../common/tenants.ts';

export const PER_FILE = 100;

/** `f<k>.yaml` → up to 100 ConfigMaps named `f<k>-cm-<i>`, `objects` in all, without namespace. */
export function configMapFiles(objects: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let f = 0; f * PER_FILE < objects; f++) {
    const docs: string[] = [];
    for (let i = 0; i < PER_FILE && f * PER_FILE + i < objects; i++)
      docs.push(`apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: f${f}-cm-${i}\ndata:\n  i: "${i}"\n`);
    files[`f${f}.yaml`] = docs.join('---\n');
  }
  return files;
}

/** The same files' objects in `namespace`, parsed as YAML 1.1 like kubectl and impersync. */
export function configMapObjects(files: Record<string, string>, namespace: string): KubeObject[] {
  return Object.values(files).flatMap((text) =>
    parseAllDocuments(text, { version: '1.1' }).map((d) => {
      const o = d.toJSON() as KubeObject;
      o.metadata.namespace = namespace;
      return o;
    }),
  );
}

/** Namespace `ns`, ServiceAccount `deployer` and a Role + RoleBinding on configmaps (list and watch included: the controller keeps live objects in watches). */
export async function createConfigMapTenant(cp: TestControlPlane, ns: string): Promise<void> {
  await createTenant(cp, ns, [
    {
      apiGroups: [''],
      resources: ['configmaps'],
      verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
    },
  ]);
}
