// Rendering the install manifests and the Helm chart with the real kustomize and helm (from
// scripts/tool-binaries, built from Go modules), and applying rendered objects to a control plane
// in the order kubectl users rely on: CRDs (and waiting until they serve), Namespaces, the rest.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiError, applyRaw, getRaw, parseYamlDocuments, pathFor, requestOk } from '../support/index.ts';
import type { KubeObject } from '../support/index.ts';

export const repoRoot = new URL('../../', import.meta.url).pathname;
export const chartDir = join(repoRoot, 'deploy/helm/impersync');
/** The Kubernetes version the test control plane runs (scripts/control-plane-binaries). */
export const kubeVersion = '1.34.3';

let tools: string | undefined;

/** The folder holding helm and kustomize; builds them on first use (minutes, once per machine). */
export function toolsDir(): string {
  if (tools) return tools;
  const res = spawnSync('bash', [join(repoRoot, 'scripts/tool-binaries')], { encoding: 'utf8', timeout: 30 * 60_000 });
  const dir = res.stdout.trim().split('\n').at(-1) ?? '';
  if (res.status !== 0 || dir === '') {
    throw new Error(
      `helm and kustomize are needed and scripts/tool-binaries could not provide them (exit ${res.status}):\n${res.stderr}\n` +
        'Install Go 1.26+ and run scripts/tool-binaries, or set IMPERSYNC_TOOLS_DIR to a folder with helm, kustomize and impersync-jsonnet, ' +
        'or IMPERSYNC_TOOLS_FROM_PATH=true to use the ones on PATH.',
    );
  }
  tools = dir;
  return dir;
}

export type ToolResult = { status: number | null; stdout: string; stderr: string };

export function runTool(tool: 'helm' | 'kustomize', args: string[]): ToolResult {
  const res = spawnSync(join(toolsDir(), tool), args, {
    cwd: repoRoot,
    encoding: 'utf8',
    // helm keeps caches and config under HOME; keep them out of the user's home.
    env: {
      ...process.env,
      HELM_CACHE_HOME: join(repoRoot, '.state/helm/cache'),
      HELM_CONFIG_HOME: join(repoRoot, '.state/helm/config'),
      HELM_DATA_HOME: join(repoRoot, '.state/helm/data'),
    },
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

function ok(tool: 'helm' | 'kustomize', args: string[]): string {
  const res = runTool(tool, args);
  if (res.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed (exit ${res.status}):\n${res.stderr}`);
  return res.stdout;
}

/** `kustomize build <dir>` (dir relative to the repository), as objects. */
export function kustomizeBuild(dir: string): KubeObject[] {
  return parseYamlDocuments(ok('kustomize', ['build', join(repoRoot, dir)]), `kustomize build ${dir}`);
}

export function kustomizeBuildText(dir: string): string {
  return ok('kustomize', ['build', join(repoRoot, dir)]);
}

/**
 * `kustomize build` of an overlay as an admin writes one: `resources` (directories of the
 * repository, e.g. deploy/install) with `components` (e.g. deploy/install/components/renderer-egress).
 * kustomize takes only relative paths, so the overlay is written under .state/ and removed after.
 */
export function kustomizeOverlay(resources: string[], components: string[]): KubeObject[] {
  mkdirSync(join(repoRoot, '.state'), { recursive: true });
  const dir = mkdtempSync(join(repoRoot, '.state', 'overlay-'));
  const rel = (d: string) => JSON.stringify(relative(dir, join(repoRoot, d)));
  try {
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n' +
        `resources: [${resources.map(rel).join(', ')}]\ncomponents: [${components.map(rel).join(', ')}]\n`,
    );
    return parseYamlDocuments(
      ok('kustomize', ['build', dir]),
      `kustomize build of an overlay of ${resources.join(', ')}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What deploy/install/tenants/impersonate.yaml documents for a tenant namespace: a RoleBinding there
 * to the ClusterRole impersync-impersonate, for the installed controller ServiceAccount.
 */
export function tenantImpersonationBinding(
  namespace: string,
  opts: { clusterRole?: string; serviceAccount?: string; controllerNamespace?: string } = {},
): KubeObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'impersync-impersonate', namespace },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: opts.clusterRole ?? 'impersync-impersonate',
    },
    subjects: [
      {
        kind: 'ServiceAccount',
        name: opts.serviceAccount ?? 'impersync-controller',
        namespace: opts.controllerNamespace ?? 'argocd',
      },
    ],
  };
}

/** `helm template` of the chart with `--set`-style values and `--set-json` values. */
export function helmTemplate(
  opts: { release?: string; namespace?: string; set?: string[]; setJson?: string[] } = {},
): KubeObject[] {
  const args = [
    'template',
    opts.release ?? 'impersync',
    chartDir,
    '--namespace',
    opts.namespace ?? 'argocd',
    '--kube-version',
    kubeVersion,
    '--include-crds',
  ];
  for (const s of opts.set ?? []) args.push('--set', s);
  for (const s of opts.setJson ?? []) args.push('--set-json', s);
  return parseYamlDocuments(ok('helm', args), 'helm template');
}

const order = (o: KubeObject) => (o.kind === 'CustomResourceDefinition' ? 0 : o.kind === 'Namespace' ? 1 : 2);

/** Server-side apply with strict field validation, as `kubectl apply --server-side` does: a misspelt field fails. */
export async function applyStrict(
  kc: KubeConfig,
  obj: KubeObject,
  fieldManager = 'impersync-install-test',
): Promise<KubeObject> {
  const path = await pathFor(kc, {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    name: obj.metadata.name,
    namespace: obj.metadata.namespace,
  });
  const query = new URLSearchParams({ fieldManager, force: 'true', fieldValidation: 'Strict' });
  return (await requestOk(kc, {
    method: 'PATCH',
    path: `${path}?${query}`,
    body: obj,
    contentType: 'application/apply-patch+yaml',
  })) as KubeObject;
}

/** Server-side applies every object as `kc`: CRDs first (waiting until Established), then Namespaces, then the rest. */
export async function applyAll(
  kc: KubeConfig,
  objects: KubeObject[],
  fieldManager = 'impersync-install-test',
): Promise<void> {
  const sorted = [...objects].sort((a, b) => order(a) - order(b));
  for (const obj of sorted) {
    try {
      await applyStrict(kc, obj, fieldManager);
    } catch (err) {
      throw new Error(
        `applying ${obj.kind} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name}: ${(err as Error).message}`,
      );
    }
    if (obj.kind === 'CustomResourceDefinition') await waitEstablished(kc, obj.metadata.name);
  }
}

async function waitEstablished(kc: KubeConfig, name: string): Promise<void> {
  const end = Date.now() + 30_000;
  while (true) {
    const crd = await getRaw(kc, { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name });
    const conditions =
      (crd?.['status'] as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
    if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) return;
    if (Date.now() > end) throw new Error(`CRD ${name} not Established after 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export type Rule = {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
};

/** Every RBAC rule in the objects, with where it is granted. */
export function rulesOf(objects: KubeObject[]): { kind: string; name: string; namespace?: string; rule: Rule }[] {
  return objects
    .filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole')
    .flatMap((o) =>
      ((o['rules'] as Rule[] | undefined) ?? []).map((rule) => ({
        kind: o.kind,
        name: o.metadata.name,
        namespace: o.metadata.namespace,
        rule,
      })),
    );
}

export function find(objects: KubeObject[], kind: string, name?: string): KubeObject {
  const found = objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (!found)
    throw new Error(
      `no ${kind}${name ? ` ${name}` : ''} in the rendered objects (${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')})`,
    );
  return found;
}

/** Polls `check` every 200 ms until it returns a value, or fails naming `what`. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  while (true) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The message with which admission refuses a dry-run apply of `obj` (422), waiting for a policy just
 * installed to take effect; any other failure is thrown.
 */
export async function admissionDenial(kc: KubeConfig, obj: KubeObject): Promise<string> {
  return until('the policy to take effect', async () => {
    try {
      await applyRaw(kc, obj, { dryRun: true });
      return undefined;
    } catch (err) {
      if (err instanceof ApiError && err.status === 422) return err.message;
      throw err;
    }
  });
}

/**
 * The Pod of a Deployment's template, created in dry run with strict field validation as `kc`:
 * admission (Pod Security of its namespace) judges it as it would the ReplicaSet's; the Pod as the
 * API server would store it. Its ServiceAccount must exist.
 */
export async function dryRunPodOf(kc: KubeConfig, deployment: KubeObject, name: string): Promise<KubeObject> {
  const template = (deployment['spec'] as { template: { metadata: Record<string, unknown>; spec: unknown } }).template;
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...template.metadata, name, namespace: deployment.metadata.namespace },
    spec: template.spec,
  } as KubeObject;
  return applyRaw(kc, pod, { dryRun: true, fieldValidation: 'Strict' });
}
