// Application fields Argo CD acts on that impersync does not implement: set, the Application is
// refused at admission (an InvalidSpecError naming the field and why), so nothing is rendered or
// applied. Syncing without them would sync something else than Argo CD would, which is worse than
// not syncing: the admin sees the condition and can remove the field or keep Argo CD. Pure.
import type { Application, ApplicationSource } from '../api/index.ts';
import { ANNOTATION_COMPARE_OPTIONS, hasCompareOption } from '../api/annotations.ts';

const HYDRATOR =
  'the source hydrator is not run by impersync (Argo CD renders spec.sourceHydrator.drySource, commits the manifests to its syncSource and syncs those); nothing is synced';
const TAG_PREFIX =
  "is not supported: impersync resolves no semver constraint over a Git repository's tags, so it cannot pick the tag Argo CD would; nothing is synced";

// Argo CD v3.6.1 (controller/state.go shouldUseServerSideDiff) then diffs client-side: gitops-engine's
// three-way strategic-merge diff against last-applied-configuration, with the Kubernetes scheme's
// defaulting functions run on both sides. impersync has neither the patch metadata nor the
// defaulters, so it cannot predict what that diff calls Synced.
const CLIENT_SIDE_DIFF =
  "is not supported: Argo CD then compares client-side (a three-way strategic merge against kubectl's last-applied-configuration, with the Kubernetes scheme's defaults), which impersync does not do; it compares only by a server-side dry-run apply. Remove ServerSideDiff=false to compare as Argo CD does with ServerSideDiff=true; nothing is synced";

function isSet(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === '') return false;
  if (Array.isArray(v)) return v.some(isSet);
  if (typeof v === 'object') return Object.values(v as object).some(isSet);
  return true;
}

/** Each refused field the Application sets, as `<path>: <why>`, in spec order. */
export function refusedApplicationFields(app: Application): string[] {
  const out: string[] = [];
  if (hasCompareOption(app, 'ServerSideDiff=false'))
    out.push(`metadata.annotations[${ANNOTATION_COMPARE_OPTIONS}] ServerSideDiff=false ${CLIENT_SIDE_DIFF}`);
  const spec = app.spec as Application['spec'] & { sourceHydrator?: unknown };
  if (isSet(spec.sourceHydrator)) out.push(`spec.sourceHydrator: ${HYDRATOR}`);
  const tagPrefix = (source: ApplicationSource | undefined, path: string): void => {
    if (isSet((source as { tagPrefix?: unknown } | undefined)?.tagPrefix)) out.push(`${path}.tagPrefix ${TAG_PREFIX}`);
  };
  tagPrefix(spec.source, 'spec.source');
  (spec.sources ?? []).forEach((s, i) => tagPrefix(s, `spec.sources[${i}]`));
  const sync = app.operation?.sync;
  tagPrefix(sync?.source, 'operation.sync.source');
  (sync?.sources ?? []).forEach((s, i) => tagPrefix(s, `operation.sync.sources[${i}]`));
  return out;
}
