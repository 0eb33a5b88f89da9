// argocd-cmd-params-cm at the controller's start and after: read once before anything is built
// (its application.namespaces decides what the Application watch lists, its processors how many
// workers run), every value logged with where it came from and every key not acted on named; then
// watched, so that a change is said: Argo CD reads these values from its environment, filled from
// the ConfigMap when the Pod starts, so they take effect at the next start here too.
import type { Logger } from 'pino';
import type { ControlClient } from '../kube/control.ts';
import { Watch } from '../kube/watch.ts';
import type { WatchEvent, WatchHttpError, WatchTransport } from '../kube/watch.ts';
import { ARGOCD_CMD_PARAMS_CM } from './cmd-params-keys.ts';
import { resolveControllerParams } from './cmd-params.ts';
import type { ControllerParams, ParamInputs } from './cmd-params.ts';

type Data = Record<string, string>;

function stringData(o: unknown): Data {
  const d = (o as { data?: unknown } | undefined)?.data;
  if (!d || typeof d !== 'object') return {};
  return Object.fromEntries(Object.entries(d).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/**
 * The ConfigMap's data, undefined when there is none. One that cannot be read is logged and read
 * as absent (Argo CD's keys are all optional): at once when the controller may not read it, after
 * a few tries when the API server does not answer (the watch then logs the keys it has as a change
 * that needs a restart).
 */
export async function readCmdParamsData(
  control: ControlClient,
  namespace: string,
  log: Logger,
  retryMs = 1000,
): Promise<Data | undefined> {
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${ARGOCD_CMD_PARAMS_CM}`;
  for (let attempt = 1; ; attempt++) {
    const res = await control.request<unknown>({ method: 'GET', path });
    if (res.ok) return stringData(res.value);
    if (res.error.code === 404) return undefined;
    const refused = res.error.code === 401 || res.error.code === 403;
    if (refused || attempt >= 5) {
      log.warn(
        { configMap: `${namespace}/${ARGOCD_CMD_PARAMS_CM}`, err: res.error.message },
        `${ARGOCD_CMD_PARAMS_CM} cannot be read: its keys take their defaults${refused ? ' (grant get, list and watch on it)' : ''}`,
      );
      return undefined;
    }
    await new Promise((r) => setTimeout(r, retryMs * attempt));
  }
}

/** Reads the ConfigMap, resolves the settings with the flags and environment, and logs them. */
export async function loadControllerParams(
  control: ControlClient,
  namespace: string,
  log: Logger,
  inputs: Omit<ParamInputs, 'data'>,
): Promise<{ params: ControllerParams; data: Data | undefined }> {
  const data = await readCmdParamsData(control, namespace, log);
  const params = resolveControllerParams({ ...inputs, data });
  if (params.logLevel) log.level = params.logLevel;
  for (const w of params.warnings) log.warn({ configMap: ARGOCD_CMD_PARAMS_CM }, w);
  log.info(
    {
      applicationNamespaces: params.applicationNamespaces,
      statusProcessors: params.statusProcessors,
      operationProcessors: params.operationProcessors,
      selfHealTimeoutSeconds: params.selfHeal.timeoutMs / 1000,
      selfHealBackoff: params.selfHeal.backoff
        ? {
            timeoutSeconds: params.selfHeal.backoff.durationMs / 1000,
            factor: params.selfHeal.backoff.factor,
            capSeconds: params.selfHeal.backoff.capMs / 1000,
          }
        : null,
      syncTimeoutSeconds: params.syncTimeoutMs / 1000,
      syncWaveDelaySeconds: params.waveDelayMs / 1000,
      from: params.sources,
    },
    `${ARGOCD_CMD_PARAMS_CM} read`,
  );
  return { params, data };
}

/** Keys whose value differs between two versions of the data. */
export function changedKeys(before: Data | undefined, after: Data | undefined): string[] {
  const a = before ?? {};
  const b = after ?? {};
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => a[k] !== b[k]).sort();
}

export const RESTART_NEEDED =
  'the application controller reads it at start, as Argo CD does from its environment: restart the controller for the change to take effect';

/** Watches the ConfigMap and logs a change from what the controller started with. */
export class CmdParamsWatch {
  private readonly watch: Watch;
  private said: string[] = [];

  constructor(transport: WatchTransport, namespace: string, startedWith: Data | undefined, log: Logger) {
    this.watch = new Watch(transport, {
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`,
      kind: 'ConfigMap',
      apiVersion: 'v1',
      fieldSelector: `metadata.name=${ARGOCD_CMD_PARAMS_CM}`,
      // An install that grants no read of it has been told at start; no retry loop of 403s.
      fatalStatuses: [403],
      onFatal: (err: WatchHttpError) =>
        log.info({ err: err.message }, `${ARGOCD_CMD_PARAMS_CM} is not watched: a change of it is not logged`),
      onError: (err) => log.debug({ err: err.message }, `${ARGOCD_CMD_PARAMS_CM} watch interrupted; reconnecting`),
    });
    this.watch.on((e: WatchEvent) => {
      if (e.type === 'RESYNC') return;
      const keys = changedKeys(startedWith, e.type === 'DELETED' ? undefined : stringData(e.object));
      // Said once per distinct change: a relist of the same object says nothing new.
      if (keys.length === 0 || keys.join(',') === this.said.join(',')) return;
      this.said = keys;
      log.warn({ configMap: ARGOCD_CMD_PARAMS_CM, keys }, `${ARGOCD_CMD_PARAMS_CM} changed: ${RESTART_NEEDED}`);
    });
  }

  start(): void {
    this.watch.start();
  }

  stop(): Promise<void> {
    return this.watch.stop();
  }
}
