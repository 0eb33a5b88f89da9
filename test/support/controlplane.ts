// The test handle on a local control plane: the process-level control plane from
// src/controlplane/, plus client-node KubeConfigs and credentials for any identity.
import { KubeConfig } from '@kubernetes/client-node';
import { readdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { AuditReadOptions, AuditRecord } from '../../src/controlplane/audit.ts';
import { readAudit, waitForAudit } from '../../src/controlplane/audit.ts';
import type { ControlPlane, ControlPlaneOptions } from '../../src/controlplane/controlplane.ts';
import { startControlPlane as startProcesses } from '../../src/controlplane/controlplane.ts';
import { adminUser, controllerUser, kubeconfigYaml } from '../../src/controlplane/identities.ts';
import { unattributedError, unattributedRequests } from './attribution.ts';
import { requestOk } from './kube.ts';

/**
 * 'admin' (system:masters), 'controller' (impersync-controller, no rights until granted), a static
 * user given in `users` at start, or a ServiceAccount (a token from the TokenRequest API).
 */
export type Identity = 'admin' | 'controller' | { user: string } | { serviceAccount: string; namespace: string };

export type KubeconfigOptions = {
  /** Every request made with this KubeConfig carries Impersonate-User (kubeconfig `as`). */
  impersonate?: string;
  namespace?: string;
};

export type HarnessOptions = ControlPlaneOptions & {
  /**
   * stop() fails when a request impersync made as a ServiceAccount does not name its Application,
   * project and revision (test/support/attribution.ts); records this returns true for are not
   * checked: a test that withholds the right to send them, for instance. Say why where it is used.
   */
  attributionExempt?: (r: AuditRecord) => boolean;
};

export type TestControlPlane = {
  server: string;
  caPem: string;
  /** The folder with kubeconfigs, audit.log and logs/ (removed by stop() unless kept). */
  dir: string;
  adminKubeconfigPath: string;
  controllerKubeconfigPath: string;
  auditLogPath: string;
  admin: KubeConfig;
  controller: KubeConfig;
  adminUserName: string;
  controllerUserName: string;
  startupMs: number;
  /** A KubeConfig that authenticates as `identity`. */
  kubeconfigFor(identity: Identity, opts?: KubeconfigOptions): Promise<KubeConfig>;
  /** The same, written to a file in `dir` (for kubectl or a child process); returns the path. */
  kubeconfigFileFor(identity: Identity, opts?: KubeconfigOptions): Promise<string>;
  /** A bearer token for `identity` (e.g. for a cluster Secret's config.bearerToken). */
  tokenFor(identity: Identity, opts?: { expirationSeconds?: number }): Promise<string>;
  /** Every audit record, from the rotated files too (the API server starts a new file every 100 MB). */
  readAudit(opts?: AuditReadOptions): Promise<AuditRecord[]>;
  waitForAudit(predicate: (r: AuditRecord) => boolean, opts?: { timeoutMs?: number }): Promise<AuditRecord[]>;
  /** Stops the processes; then fails if impersync made a request that names no Application (see HarnessOptions). */
  stop(): Promise<void>;
  /** The underlying control plane (processes, file layout, static users). */
  processes: ControlPlane;
};

/** The audit log and the files the API server rotated it into (audit-<time>.log beside it), oldest first. */
async function readAllAudit(path: string, opts: AuditReadOptions = {}): Promise<AuditRecord[]> {
  const dir = dirname(path);
  const base = basename(path, '.log');
  let names: string[] = [];
  try {
    names = (await readdir(dir)).filter((f) => f.startsWith(`${base}-`) && f.endsWith('.log')).sort();
  } catch {
    return [];
  }
  const out: AuditRecord[] = [];
  for (const f of [...names.map((n) => join(dir, n)), path]) out.push(...(await readAudit(f, opts)));
  return out;
}

function identityName(identity: Identity): string {
  if (identity === 'admin' || identity === 'controller') return identity;
  if ('user' in identity) return identity.user.replaceAll(':', '-');
  return `sa-${identity.namespace}-${identity.serviceAccount}`;
}

/**
 * Starts etcd, kube-apiserver and kube-controller-manager with the CRDs installed. Fails with
 * instructions when the binaries cannot be found or built. Stop it in an after() hook.
 */
export async function startControlPlane(opts: HarnessOptions = {}): Promise<TestControlPlane> {
  const { attributionExempt, ...processOptions } = opts;
  const keep = process.env['IMPERSYNC_KEEP_CONTROL_PLANE'] === '1';
  const cp = await startProcesses({ keepDir: keep || undefined, ...processOptions });
  if (keep) process.stderr.write(`control plane kept in ${cp.dir}\n`);
  const load = (yaml: string) => {
    const kc = new KubeConfig();
    kc.loadFromString(yaml);
    return kc;
  };
  const admin = load(cp.kubeconfig(adminUser.name));

  const tokenFor = async (identity: Identity, o: { expirationSeconds?: number } = {}): Promise<string> => {
    if (identity === 'admin') return cp.admin.token;
    if (identity === 'controller') return cp.controller.token;
    if ('user' in identity) {
      const user = cp.users.get(identity.user);
      if (!user) throw new Error(`no static user ${identity.user}: pass it in startControlPlane({ users: [...] })`);
      return user.token;
    }
    const body = (await requestOk(admin, {
      method: 'POST',
      path: `/api/v1/namespaces/${encodeURIComponent(identity.namespace)}/serviceaccounts/${encodeURIComponent(identity.serviceAccount)}/token`,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: o.expirationSeconds ?? 86_400 },
      },
    })) as { status: { token: string } };
    return body.status.token;
  };

  const yamlFor = async (identity: Identity, o: KubeconfigOptions = {}) =>
    kubeconfigYaml({
      server: cp.server,
      caPem: cp.caPem,
      name: identityName(identity),
      token: await tokenFor(identity),
      ...o,
    });

  return {
    server: cp.server,
    caPem: cp.caPem,
    dir: cp.dir,
    adminKubeconfigPath: cp.adminKubeconfigPath,
    controllerKubeconfigPath: cp.controllerKubeconfigPath,
    auditLogPath: cp.auditLogPath,
    admin,
    controller: load(cp.kubeconfig(controllerUser.name)),
    adminUserName: adminUser.name,
    controllerUserName: controllerUser.name,
    startupMs: cp.startupMs,
    kubeconfigFor: async (identity, o) => load(await yamlFor(identity, o)),
    kubeconfigFileFor: async (identity, o) => {
      const path = join(
        cp.dir,
        `${identityName(identity)}${o?.impersonate ? `-as-${o.impersonate.replaceAll(':', '-')}` : ''}.kubeconfig`,
      );
      await writeFile(path, await yamlFor(identity, o), { mode: 0o600 });
      return path;
    },
    tokenFor,
    readAudit: (opts) => readAllAudit(cp.auditLogPath, opts),
    waitForAudit: (predicate, o) => waitForAudit(cp.auditLogPath, predicate, o),
    stop: async () => {
      // Read before the folder goes; watches still open are the shared ones, which name no Application anyway.
      let records: AuditRecord[] = [];
      try {
        records = await readAllAudit(cp.auditLogPath);
      } finally {
        await cp.stop();
      }
      const found = unattributedRequests(records, attributionExempt);
      if (found.length > 0) throw unattributedError(found);
    },
    processes: cp,
  };
}
