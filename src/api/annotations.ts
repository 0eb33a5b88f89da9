// Argo CD's comma-separated option annotations, read as Argo CD reads them: values trimmed, empty
// ones dropped, the first occurrence kept. Pure, and in api/ so that every layer (the admission
// gate included, which may reach no sync module) reads them one way.

export const ANNOTATION_SYNC_OPTIONS = 'argocd.argoproj.io/sync-options';
/** IgnoreExtraneous on a live object; ServerSideDiff and IncludeMutationWebhook on an Application. */
export const ANNOTATION_COMPARE_OPTIONS = 'argocd.argoproj.io/compare-options';

/** What the annotation readers look at: any object with metadata (an Application too). */
export type Annotated = { metadata?: { annotations?: Record<string, string> | undefined } | undefined };

export function annotationsOf(obj: Annotated | null | undefined): Record<string, string> {
  const a = obj?.metadata?.annotations;
  return a !== null && typeof a === 'object' ? a : {};
}

/** The values of a comma-separated annotation, trimmed, empty ones dropped, first occurrence kept. */
export function annotationCSV(obj: Annotated | null | undefined, key: string): string[] {
  const raw = annotationsOf(obj)[key];
  if (typeof raw !== 'string') return [];
  const seen = new Set<string>();
  for (const item of raw.split(',')) {
    const v = item.trim();
    if (v !== '') seen.add(v);
  }
  return [...seen];
}

export function hasSyncOption(obj: Annotated | null | undefined, option: string): boolean {
  return annotationCSV(obj, ANNOTATION_SYNC_OPTIONS).includes(option);
}

export function hasCompareOption(obj: Annotated | null | undefined, option: string): boolean {
  return annotationCSV(obj, ANNOTATION_COMPARE_OPTIONS).includes(option);
}
