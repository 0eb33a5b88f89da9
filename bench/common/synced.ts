// A control plane with N impersonated Applications synced by a controller process: the starting
// point of the steady-state and reaction benchmarks.
import type { TestRepo } from '../../test/support/git.ts';
import { startControlPlane, type TestControlPlane } from '../../test/support/index.ts';
import { createApplications, createRepo, prepareControlNamespace, waitAllDone } from './impersync.ts';
import { startControllerProcess, type ControllerProcess } from './process.ts';
import { seconds } from './report.ts';
import { appName, createTenants } from './tenants.ts';

export type SyncedEnvironment = {
  cp: TestControlPlane;
  repo: TestRepo;
  controller: ControllerProcess;
  apps: string[];
  stop(): Promise<void>;
};

export async function syncedEnvironment(
  n: number,
  opts: { settings?: Record<string, string>; selfHeal?: boolean; timeoutMs?: number } = {},
): Promise<SyncedEnvironment> {
  const cp = await startControlPlane();
  const stops: Array<() => Promise<void>> = [() => cp.stop()];
  const stop = async () => {
    for (const s of stops.reverse())
      await s().catch((err: unknown) => console.error(`cleanup: ${(err as Error).message}`));
  };
  try {
    await prepareControlNamespace(cp, opts.settings);
    const apps = Array.from({ length: n }, (_, i) => appName('app-', i));
    await createTenants(cp, apps);
    const repo = await createRepo(apps);
    stops.push(() => repo.remove());
    const controller = await startControllerProcess(cp.controllerKubeconfigPath);
    stops.push(() => controller.stop());
    const from = Date.now();
    await createApplications(cp, apps, repo.url, { ...(opts.selfHeal ? { selfHeal: true } : {}) });
    const done = await waitAllDone(cp, apps, opts.timeoutMs ?? 1_800_000);
    console.log(`${n} Applications Synced + Succeeded after ${seconds(done.doneAt - from)} s`);
    return { cp, repo, controller, apps, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
