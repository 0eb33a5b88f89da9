// Where a control plane keeps its files. Everything lives in one folder, so a person can point
// kubectl at it and a failed test can be inspected:
//
//   DIR/admin.kubeconfig        system:masters
//   DIR/controller.kubeconfig   the controller identity (no rights until granted)
//   DIR/audit.log               JSON lines, one audit Event per request stage
//   DIR/ready                   written last by `impersync cluster`
//   DIR/logs/<process>.log      stdout and stderr of etcd, kube-apiserver, kube-controller-manager
//   DIR/state/...               etcd data, keys, certificates, token file (recreated at each start)
import { join } from 'node:path';

export type Layout = {
  dir: string;
  adminKubeconfig: string;
  controllerKubeconfig: string;
  auditLog: string;
  ready: string;
  logs: string;
  state: string;
  etcdData: string;
  certDir: string;
  caFile: string;
  tokenFile: string;
  auditPolicy: string;
  serviceAccountKey: string;
  serviceAccountPublicKey: string;
  controllerManagerKubeconfig: string;
  log(process: string): string;
};

export function layout(dir: string): Layout {
  const state = join(dir, 'state');
  const logs = join(dir, 'logs');
  return {
    dir,
    adminKubeconfig: join(dir, 'admin.kubeconfig'),
    controllerKubeconfig: join(dir, 'controller.kubeconfig'),
    auditLog: join(dir, 'audit.log'),
    ready: join(dir, 'ready'),
    logs,
    state,
    etcdData: join(state, 'etcd'),
    certDir: join(state, 'pki'),
    caFile: join(state, 'pki', 'ca.crt'),
    tokenFile: join(state, 'tokens.csv'),
    auditPolicy: join(state, 'audit-policy.yaml'),
    serviceAccountKey: join(state, 'service-account.key'),
    serviceAccountPublicKey: join(state, 'service-account.pub'),
    controllerManagerKubeconfig: join(state, 'kube-controller-manager.kubeconfig'),
    log: (process: string) => join(logs, `${process}.log`),
  };
}
