// A terminated operation's hooks (gitops-engine's Terminate and terminateHooksPreemptively): every
// hook the operation created lets go of Argo CD's hook finalizer, and one still running is deleted,
// so that no hook is left held by a finalizer nothing will take off. As the Application's identity,
// through its one client; what fails is logged (the operation ends Terminated regardless, as in
// gitops-engine, whose phase then says "Operation termination had errors").
import type { Logger } from 'pino';
import type { OperationState } from '../api/index.ts';
import type { DestinationClientFactory } from '../kube/factory.ts';
import { removeHookFinalizer } from '../sync/hook-finalizer.ts';
import { admit, madeFor } from './admission.ts';
import type { RawApplication } from './applications.ts';
import type { ControllerCache } from './cache.ts';

export async function terminateHooks(
  d: { cache: ControllerCache; factory: DestinationClientFactory; logger: Logger },
  raw: RawApplication,
  state: OperationState,
): Promise<void> {
  const hooks = (state.syncResult?.resources ?? []).filter((r) => r.hookType !== undefined);
  if (hooks.length === 0) return;
  const ctx = admit(d.cache.controlState(), raw);
  const log = d.logger.child({ application: `${raw.metadata.namespace ?? ''}/${raw.metadata.name}` });
  if (!ctx.admitted) {
    log.warn(`running hooks not terminated: ${ctx.condition.message}`);
    return;
  }
  const client = d.factory.forIdentity(ctx.cluster, ctx.actsAs, madeFor(ctx, state.syncResult?.revision));
  for (const r of hooks) {
    const ref = {
      apiVersion: r.group ? `${r.group}/${r.version}` : r.version,
      kind: r.kind,
      name: r.name,
      ...(r.namespace ? { namespace: r.namespace } : {}),
    };
    const got = await client.get(ref);
    if (!got.ok) {
      log.warn(`Failed to get live resource: ${got.error.message}`);
      continue;
    }
    if (!got.value) continue;
    const released = await removeHookFinalizer(client, got.value);
    if (!released.ok) {
      log.warn(`Failed to remove hook finalizer: ${released.error}`);
      continue;
    }
    if (r.hookPhase !== 'Running' || !released.live) continue;
    const gone = await client.delete(ref, { propagationPolicy: 'Foreground' });
    if (!gone.ok) log.warn(`Failed to delete: ${gone.error.message}`);
  }
}
