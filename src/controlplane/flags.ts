// Command lines of etcd, kube-apiserver and kube-controller-manager (flag names checked against
// the --help of etcd 3.6 and Kubernetes 1.34). Everything listens on 127.0.0.1 only.
import type { Layout } from './layout.ts';

export type Ports = { etcdClient: number; etcdPeer: number; apiserver: number; controllerManager: number };

export function etcdArgs(l: Layout, p: Ports): string[] {
  const client = `http://127.0.0.1:${p.etcdClient}`;
  const peer = `http://127.0.0.1:${p.etcdPeer}`;
  return [
    '--name=impersync',
    `--data-dir=${l.etcdData}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=impersync=${peer}`,
    '--initial-cluster-state=new',
    // Throwaway state: durability buys nothing and fsync dominates etcd's latency.
    '--unsafe-no-fsync=true',
    '--log-level=warn',
  ];
}

/** The issuer of ServiceAccount tokens, as in a real cluster. */
export const serviceAccountIssuer = 'https://kubernetes.default.svc.cluster.local';

/** `profiling` serves /debug/pprof (to system:masters): a benchmark's look at where the API server's CPU goes. */
export function apiserverArgs(l: Layout, p: Ports, o: { profiling?: boolean } = {}): string[] {
  return [
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${p.apiserver}`,
    // No --tls-cert-file: the server generates a CA and a serving certificate for 127.0.0.1 here;
    // the kubeconfigs trust that CA.
    `--cert-dir=${l.certDir}`,
    `--etcd-servers=http://127.0.0.1:${p.etcdClient}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    '--authorization-mode=RBAC',
    `--token-auth-file=${l.tokenFile}`,
    `--service-account-issuer=${serviceAccountIssuer}`,
    `--service-account-key-file=${l.serviceAccountPublicKey}`,
    `--service-account-signing-key-file=${l.serviceAccountKey}`,
    `--audit-policy-file=${l.auditPolicy}`,
    `--audit-log-path=${l.auditLog}`,
    '--audit-log-format=json',
    // Each event is written before the request returns (batching would delay what tests read).
    '--audit-log-mode=blocking',
    '--allow-privileged=true',
    `--profiling=${o.profiling === true}`,
    '--v=1',
  ];
}

export function controllerManagerArgs(l: Layout, p: Ports): string[] {
  return [
    `--kubeconfig=${l.controllerManagerKubeconfig}`,
    `--authentication-kubeconfig=${l.controllerManagerKubeconfig}`,
    `--authorization-kubeconfig=${l.controllerManagerKubeconfig}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${p.controllerManager}`,
    `--cert-dir=${l.certDir}/kube-controller-manager`,
    '--leader-elect=false',
    '--use-service-account-credentials=false',
    `--root-ca-file=${l.caFile}`,
    // Lets the token controller fill kubernetes.io/service-account-token Secrets, which tests use
    // as long-lived bearer tokens for cluster Secrets.
    `--service-account-private-key-file=${l.serviceAccountKey}`,
    '--cluster-name=impersync',
    '--profiling=false',
    '--v=1',
  ];
}
