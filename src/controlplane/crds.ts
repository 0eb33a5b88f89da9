// Installs the Application and AppProject CRDs (deploy/crds/*.yaml) with server-side apply and
// waits until the API server reports them Established, i.e. serving their resources.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import type { Endpoint } from './http.ts';
import { request, statusMessage } from './http.ts';

export const crdDir = fileURLToPath(new URL('../../deploy/crds/', import.meta.url));

type Crd = { apiVersion: string; kind: string; metadata: { name: string } };

/** Every CustomResourceDefinition in `dir` (all *.yaml files, all documents), parsed as YAML 1.1. */
export async function loadCrds(dir = crdDir): Promise<Crd[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml') || f.endsWith('.yml')).sort();
  const crds: Crd[] = [];
  for (const file of files) {
    const path = join(dir, file);
    for (const doc of parseAllDocuments(await readFile(path, 'utf8'), { version: '1.1' })) {
      if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors[0]?.message}`);
      const value = doc.toJS({ maxAliasCount: -1 }) as Partial<Crd> | null;
      if (value === null) continue;
      if (value.kind !== 'CustomResourceDefinition' || typeof value.metadata?.name !== 'string') {
        throw new Error(
          `${path}: expected a CustomResourceDefinition with metadata.name, got kind ${String(value.kind)}`,
        );
      }
      crds.push(value as Crd);
    }
  }
  return crds;
}

const crdPath = (name: string) => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;

export async function installCrds(
  endpoint: Endpoint,
  opts: { dir?: string; timeoutMs?: number } = {},
): Promise<string[]> {
  const crds = await loadCrds(opts.dir);
  for (const crd of crds) {
    const res = await request(endpoint, {
      method: 'PATCH',
      path: `${crdPath(crd.metadata.name)}?fieldManager=impersync&force=true`,
      headers: { 'content-type': 'application/apply-patch+yaml' },
      body: JSON.stringify(crd),
    });
    if (res.status >= 300)
      throw new Error(`installing CRD ${crd.metadata.name} failed (HTTP ${res.status}): ${statusMessage(res)}`);
  }
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  for (const crd of crds) {
    while (true) {
      const res = await request(endpoint, { path: crdPath(crd.metadata.name) });
      const conditions =
        res.status === 200
          ? ((JSON.parse(res.text) as { status?: { conditions?: { type: string; status: string }[] } }).status
              ?.conditions ?? [])
          : [];
      if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline)
        throw new Error(`CRD ${crd.metadata.name} was not Established within ${opts.timeoutMs ?? 30_000} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return crds.map((c) => c.metadata.name);
}
