// Revisions as an Application names them (targetRevision): checked before git sees them, and
// matched against the refs a remote advertises the way Argo CD resolves them.
import { SourceError } from './errors.ts';

export function checkRevision(targetRevision: string | undefined, shown: string): string {
  const rev = (targetRevision ?? '').trim();
  if (rev === '') return 'HEAD';
  // Refuse what git would read as an option or what no ref name may hold.
  if (rev.startsWith('-') || /[\s\0~^:?*[\\]/.test(rev)) {
    throw new SourceError('InvalidSource', `targetRevision '${rev}' is not a valid revision for '${shown}'`);
  }
  return rev;
}

/** What `rev` names among the remote's refs: HEAD, a full ref, a branch, then a tag (peeled to its commit). */
export function matchRef(refs: ReadonlyMap<string, string>, rev: string): string | undefined {
  if (rev === 'HEAD') return refs.get('HEAD');
  if (rev.startsWith('refs/')) return refs.get(`${rev}^{}`) ?? refs.get(rev);
  return refs.get(`refs/heads/${rev}`) ?? refs.get(`refs/tags/${rev}^{}`) ?? refs.get(`refs/tags/${rev}`);
}
