// argocd-cm's health customizations turned into the assessor each reconcile passes to compare()
// and sync(): rebuilt only when the customization keys change, all sharing one Lua runner (a
// worker thread) that the controller closes when it stops. Below them, the default library of
// Argo CD's bundled checks (IMPERSYNC_HEALTH_SCRIPTS_DIR, or the image's folder).
import type { ConfigMap } from '../api/index.ts';
import type { HealthAssessor } from '../sync/index.ts';
import {
  HEALTH_LIBRARY_KEY,
  HealthLibraries,
  LuaRunner,
  RESOURCE_CUSTOMIZATIONS_KEY,
  createHealthAssessor,
  defaultHealthScriptsDir,
  readHealthCustomizations,
} from '../sync/index.ts';

export interface HealthAssessorsOptions {
  /** The default library's folder; default defaultHealthScriptsDir() (none: only argocd-cm and built-in checks). */
  defaultLibraryDir?: string | undefined;
}

export class HealthAssessors {
  readonly #runner = new LuaRunner();
  // Read once a minute at most, whichever argocd-cm the assessor of the moment was built from.
  readonly #libraries = new HealthLibraries();
  readonly #defaultLibraryDir: string | undefined;
  #last: { key: string; assessor: HealthAssessor } | undefined;

  constructor(opts: HealthAssessorsOptions = {}) {
    this.#defaultLibraryDir = 'defaultLibraryDir' in opts ? opts.defaultLibraryDir : defaultHealthScriptsDir();
  }

  /** The assessor for argocd-cm as it is now (absent or unreadable: the built-in checks). */
  for(cm: ConfigMap | undefined | Error): HealthAssessor {
    const data = cm instanceof Error || !cm ? {} : (cm.data ?? {});
    const relevant = Object.entries(data).filter(
      ([k]) => k.startsWith(RESOURCE_CUSTOMIZATIONS_KEY) || k === HEALTH_LIBRARY_KEY,
    );
    const key = JSON.stringify(relevant);
    if (this.#last?.key !== key) {
      const customizations = readHealthCustomizations(Object.fromEntries(relevant));
      this.#last = {
        key,
        assessor: createHealthAssessor({
          customizations,
          runner: this.#runner,
          libraries: this.#libraries,
          defaultLibraryDir: this.#defaultLibraryDir,
        }),
      };
    }
    return this.#last.assessor;
  }

  close(): Promise<void> {
    return this.#runner.close();
  }
}
