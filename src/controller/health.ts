// argocd-cm's health customizations turned into the assessor each reconcile passes to compare()
// and sync(): rebuilt only when the customization keys change, all sharing one Lua runner (a
// worker thread) that the controller closes when it stops.
import type { ConfigMap } from '../api/index.ts';
import type { HealthAssessor } from '../sync/index.ts';
import {
  HEALTH_LIBRARY_KEY,
  LuaRunner,
  RESOURCE_CUSTOMIZATIONS_KEY,
  createHealthAssessor,
  readHealthCustomizations,
} from '../sync/index.ts';

export class HealthAssessors {
  readonly #runner = new LuaRunner();
  #last: { key: string; assessor: HealthAssessor } | undefined;

  /** The assessor for argocd-cm as it is now (absent or unreadable: the built-in checks). */
  for(cm: ConfigMap | undefined | Error): HealthAssessor {
    const data = cm instanceof Error || !cm ? {} : (cm.data ?? {});
    const relevant = Object.entries(data).filter(
      ([k]) => k.startsWith(RESOURCE_CUSTOMIZATIONS_KEY) || k === HEALTH_LIBRARY_KEY,
    );
    const key = JSON.stringify(relevant);
    if (this.#last?.key !== key) {
      const customizations = readHealthCustomizations(Object.fromEntries(relevant));
      this.#last = { key, assessor: createHealthAssessor({ customizations, runner: this.#runner }) };
    }
    return this.#last.assessor;
  }

  close(): Promise<void> {
    return this.#runner.close();
  }
}
