// `operation.sync.manifests` (`argocd app sync --local`): the objects a user sent to be applied
// instead of what the source renders. Argo CD's controller reads each entry as one object
// (unmarshalManifests: v1alpha1.UnmarshalToUnstructured) and fails the comparison with "Failed to
// load local manifests: <error>" when one does not parse. They are tenant content like any file of a
// repository, so they are parsed here, in the renderer, with the manifest parser and its document
// limits (aliases counted at every use), never in the controller (ARCHITECTURE.md, the credential rule).
import { SourceError } from './errors.ts';
import type { DocumentLimits } from './expand.ts';
import { parseManifests, type ParsedObject } from './parse.ts';

/** Most entries one operation may hold (an operation lives in etcd, within its 1.5 MiB). */
export const MAX_LOCAL_MANIFESTS = 10_000;

const PREFIX = 'Failed to load local manifests: ';

/** Each entry is exactly one object (YAML or JSON), as Argo CD reads it; anything else is refused. */
export function parseLocalManifests(manifests: readonly string[], limits: DocumentLimits): ParsedObject[] {
  if (manifests.length > MAX_LOCAL_MANIFESTS)
    throw new SourceError(
      'TooLarge',
      `${PREFIX}${manifests.length} manifests, over the limit of ${MAX_LOCAL_MANIFESTS}`,
    );
  const out: ParsedObject[] = [];
  manifests.forEach((text, i) => {
    const file = `operation.sync.manifests[${i}]`;
    let parsed: ParsedObject[];
    try {
      parsed = parseManifests(text, file, { limits });
    } catch (err) {
      if (err instanceof SourceError) throw new SourceError(err.reason, `${PREFIX}${err.message}`, { cause: err });
      throw err;
    }
    // A List is expanded by the parser; Argo CD keeps it as one object, which no apply accepts either.
    if (parsed.length !== 1)
      throw new SourceError(
        'InvalidManifest',
        `${PREFIX}${file}: holds ${parsed.length} objects; each entry is one Kubernetes object`,
      );
    out.push(...parsed);
  });
  return out;
}
