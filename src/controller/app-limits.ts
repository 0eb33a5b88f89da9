// The limits each Application's render is held to (api/limits.ts), from argocd-cm's keys of
// impersync's own; an unusable value keeps that limit's default and says why.
import type { ConfigMap } from '../api/index.ts';
import { APPLICATION_LIMIT_KEYS, DEFAULT_APPLICATION_LIMITS, type ApplicationLimits } from '../api/limits.ts';
import { parseDurationSeconds } from '../impersonation/duration.ts';
import { parseByteSize } from '../renderer/sizes.ts';

export interface ReadLimits {
  limits: ApplicationLimits;
  /** One message per unusable value, naming the key and the default used instead. */
  errors: string[];
}

export function readApplicationLimits(cm: ConfigMap | undefined | Error): ReadLimits {
  const data = cm instanceof Error || !cm ? {} : (cm.data ?? {});
  const limits = { ...DEFAULT_APPLICATION_LIMITS };
  const errors: string[] = [];
  const raw = (key: string): string | undefined => {
    const v = data[key];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const timeout = raw(APPLICATION_LIMIT_KEYS.renderTimeout);
  if (timeout !== undefined) {
    const d = parseDurationSeconds(timeout);
    if (d.ok && d.seconds > 0) limits.renderTimeoutMs = Math.round(d.seconds * 1000);
    else
      errors.push(
        `argocd-cm ${APPLICATION_LIMIT_KEYS.renderTimeout}: ${d.ok ? 'must be more than 0' : d.error}; using ${DEFAULT_APPLICATION_LIMITS.renderTimeoutMs / 1000}s`,
      );
  }
  const objects = raw(APPLICATION_LIMIT_KEYS.maxObjects);
  if (objects !== undefined) {
    const n = Number(objects);
    if (Number.isInteger(n) && n > 0) limits.maxObjects = n;
    else
      errors.push(
        `argocd-cm ${APPLICATION_LIMIT_KEYS.maxObjects}: '${objects}' is not a whole number above 0; using ${DEFAULT_APPLICATION_LIMITS.maxObjects}`,
      );
  }
  const size = raw(APPLICATION_LIMIT_KEYS.maxRenderedSize);
  if (size !== undefined) {
    const b = parseByteSize(size);
    if (b.ok && b.bytes > 0) limits.maxRenderedBytes = b.bytes;
    else
      errors.push(
        `argocd-cm ${APPLICATION_LIMIT_KEYS.maxRenderedSize}: ${b.ok ? 'must be more than 0' : b.error}; using 16Mi`,
      );
  }
  return { limits, errors };
}

/** The limits for argocd-cm as it is now, read again only when it changes; unusable values logged once. */
export class ApplicationLimitsReader {
  readonly #warn: (message: string) => void;
  #last: { key: string; limits: ApplicationLimits } | undefined;

  constructor(warn: (message: string) => void) {
    this.#warn = warn;
  }

  for(cm: ConfigMap | undefined | Error): ApplicationLimits {
    const data = cm instanceof Error || !cm ? {} : (cm.data ?? {});
    const key = JSON.stringify(Object.values(APPLICATION_LIMIT_KEYS).map((k) => data[k]));
    if (this.#last?.key !== key) {
      const read = readApplicationLimits(cm);
      for (const e of read.errors) this.#warn(e);
      this.#last = { key, limits: read.limits };
    }
    return this.#last.limits;
  }
}
