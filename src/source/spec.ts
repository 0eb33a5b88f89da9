// Reading spec.source the way Argo CD does: which source type it names explicitly, and whether a
// block such as `directory: {recurse: false}` counts as set at all (it does not: all zero values).
import type { ApplicationSource } from '../api/application.ts';
import { SourceError } from './errors.ts';

export type SourceType = 'Directory' | 'Kustomize' | 'Helm' | 'Plugin';

/** True for undefined, null, false, '', 0, and lists or objects made only of such values. */
export function isZero(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === '' || v === 0) return true;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === 'object') return Object.values(v).every(isZero);
  return false;
}

/** The type spec.source sets explicitly (helm, kustomize or directory block), if any; two is an error. */
export function explicitType(source: ApplicationSource): SourceType | undefined {
  const set: SourceType[] = [];
  if (!isZero(source.helm)) set.push('Helm');
  if (!isZero(source.kustomize)) set.push('Kustomize');
  if (!isZero(source.directory)) set.push('Directory');
  // Argo CD tests the pointer, not its contents: `plugin: {}` asks for a plugin found by discovery.
  if (source.plugin !== undefined && source.plugin !== null) set.push('Plugin');
  if (set.length > 1) {
    throw new SourceError('InvalidSource', `multiple application sources defined: ${set.join(',')}`);
  }
  return set[0];
}

/** Fails on a field of a spec.source block that is set but not implemented, instead of ignoring it. */
export function refuseUnsupported(block: string, spec: object | undefined, supported: ReadonlySet<string>): void {
  for (const [key, value] of Object.entries(spec ?? {})) {
    if (!supported.has(key) && !isZero(value)) {
      throw new SourceError('InvalidSource', `spec.source.${block}.${key} is not supported by impersync`);
    }
  }
}
