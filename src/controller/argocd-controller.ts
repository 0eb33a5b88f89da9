// Whether Argo CD's own application controller is running against the same Applications: then
// impersync refuses to reconcile (two controllers would apply, prune and write status over each
// other, and Argo CD's as its own credential, not the AppProject's ServiceAccount).
//
// How it knows: Argo CD's install runs its application controller as the StatefulSet (or
// Deployment) `argocd-application-controller`, whose Pods carry the label
// `app.kubernetes.io/name=argocd-application-controller`, in the namespace whose Applications it
// reconciles, the same control namespace as impersync's. A Pod with that label there, Ready and not
// being deleted, is a running Argo CD controller. Read with list and watch on Pods of the control
// namespace only (deploy/ grants no more); a controller scaled to 0 has no Pod, and one that is
// starting is not Ready yet. Without that right (403) impersync cannot tell, says so once in its
// log, and does not refuse: the install's RBAC then decides, as before.
import type { Logger } from 'pino';
import type { WatchHttpError, WatchTransport, WatchedObject } from '../kube/watch.ts';
import { Watch } from '../kube/watch.ts';

export const ARGOCD_CONTROLLER_LABEL = 'app.kubernetes.io/name';
export const ARGOCD_CONTROLLER_NAME = 'argocd-application-controller';

/** Whether a Pod is running: Ready=True and not being deleted. */
export function podReady(pod: WatchedObject): boolean {
  if ((pod.metadata as { deletionTimestamp?: string }).deletionTimestamp) return false;
  const conditions = (pod['status'] as { conditions?: Array<{ type?: string; status?: string }> } | undefined)
    ?.conditions;
  return (conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** The condition message for the Ready Pods of Argo CD's controller in `namespace`, or undefined. */
export function conflictMessage(namespace: string, pods: readonly WatchedObject[]): string | undefined {
  const ready = pods
    .filter(podReady)
    .map((p) => p.metadata.name)
    .sort();
  if (ready.length === 0) return undefined;
  return (
    `Argo CD's application controller is running in namespace ${namespace} ` +
    `(Ready Pod ${ready.join(', ')} labelled ${ARGOCD_CONTROLLER_LABEL}=${ARGOCD_CONTROLLER_NAME}): ` +
    `impersync does not reconcile or sync this Application while it runs. ` +
    `Scale it to 0 (kubectl -n ${namespace} scale statefulset ${ARGOCD_CONTROLLER_NAME} --replicas=0; docs/migration.md)`
  );
}

export class ArgoControllerDetector {
  readonly #watch: Watch;
  readonly #namespace: string;
  readonly #log: Logger;
  #message: string | undefined;
  #forbidden = false;
  #settled!: () => void;
  /** Resolves once the Pods have been listed, or the list was refused (403). */
  readonly ready: Promise<void>;
  onChange: (() => void) | undefined;

  constructor(transport: WatchTransport, namespace: string, log: Logger) {
    this.#namespace = namespace;
    this.#log = log;
    this.ready = new Promise((r) => (this.#settled = r));
    this.#watch = new Watch(transport, {
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
      kind: 'Pod',
      apiVersion: 'v1',
      labelSelector: `${ARGOCD_CONTROLLER_LABEL}=${ARGOCD_CONTROLLER_NAME}`,
      fatalStatuses: [403],
      onFatal: (err: WatchHttpError) => {
        this.#forbidden = true;
        log.warn(
          { namespace, err: err.message },
          `cannot list Pods in ${namespace}: impersync cannot tell whether Argo CD's application controller is running against the same Applications (grant list and watch on pods in ${namespace}, as deploy/ does)`,
        );
        this.#settled();
      },
      onError: (err) => log.debug({ err: err.message }, 'Argo CD controller Pod watch interrupted; reconnecting'),
    });
    this.#watch.on(() => this.#update());
    void this.#watch.synced.then(() => {
      this.#update();
      this.#settled();
    });
  }

  /** The condition message while Argo CD's controller runs, else undefined. */
  running(): string | undefined {
    return this.#forbidden ? undefined : this.#message;
  }

  #update(): void {
    const next = conflictMessage(this.#namespace, this.#watch.list());
    if (next === this.#message) return;
    const was = this.#message;
    this.#message = next;
    if (next) this.#log.warn({ namespace: this.#namespace }, next);
    else if (was)
      this.#log.info(
        { namespace: this.#namespace },
        "Argo CD's application controller no longer runs: reconciling Applications again",
      );
    this.onChange?.();
  }

  start(): void {
    this.#watch.start();
  }

  async stop(): Promise<void> {
    await this.#watch.stop();
  }
}
