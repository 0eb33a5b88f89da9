// Chart versions as Argo CD resolves targetRevision (util/versions/tags.go MaxVersion), which uses
// Masterminds/semver v3. Evaluated with npm's `semver` package (the parser npm itself uses, well
// kept, no dependencies), with Masterminds' differences applied here: `,` means AND, `!=` is an
// operator, versions may be partial ("1.2", "v1") and keep their original text, and a prerelease
// version satisfies a comparator only when that comparator names a prerelease itself.
import semver from 'semver';

/** Masterminds' NewVersion (not strict): `v1.2.3`, `1.2`, `1`, with prerelease and metadata. */
export function parseVersion(text: string): semver.SemVer | undefined {
  const m = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/.exec(text.trim());
  if (!m) return undefined;
  return semver.parse(`${m[1]}.${m[2] ?? 0}.${m[3] ?? 0}${m[4] ?? ''}${m[5] ?? ''}`) ?? undefined;
}

export function isVersion(text: string): boolean {
  return parseVersion(text) !== undefined;
}

interface Group {
  range: semver.Range;
  not: semver.SemVer[];
  /** Every comparator of the group names a prerelease (Masterminds lets prereleases through only then). */
  allPrerelease: boolean;
}

/** A Masterminds constraint, or undefined when it is not one. */
export function parseConstraint(text: string): Group[] | undefined {
  const groups: Group[] = [];
  for (const part of text.split('||')) {
    const tokens = part
      .replace(/,/g, ' ')
      .replace(/(>=|<=|!=|=|>|<|~|\^)\s+/g, '$1')
      .trim()
      .split(/\s+/)
      .filter((t) => t !== '');
    const not: semver.SemVer[] = [];
    const rest: string[] = [];
    for (const t of tokens) {
      if (t.startsWith('!=')) {
        const v = parseVersion(t.slice(2));
        if (!v) return undefined;
        not.push(v);
      } else rest.push(t);
    }
    const versions = [...rest.filter((t) => t !== '-'), ...not.map((n) => n.version)];
    const allPrerelease = versions.length > 0 && versions.every((t) => /\d-[0-9A-Za-z]/.test(t));
    try {
      groups.push({ range: new semver.Range(rest.join(' ') || '*', { includePrerelease: true }), not, allPrerelease });
    } catch {
      return undefined;
    }
  }
  return groups.length > 0 ? groups : undefined;
}

function satisfies(groups: Group[], v: semver.SemVer): boolean {
  return groups.some(
    (g) => (v.prerelease.length === 0 || g.allPrerelease) && !g.not.some((n) => semver.eq(n, v)) && g.range.test(v),
  );
}

/**
 * Argo CD's MaxVersion: an exact version is returned as written, without looking at the tags; a
 * constraint gives the highest tag that satisfies it, in its original text; anything else must be
 * one of the tags. The errors are Argo CD's ("invalid revision: ...").
 */
export function maxVersion(revision: string, tags: readonly string[]): string {
  if (isVersion(revision)) return revision;
  const groups = parseConstraint(revision);
  if (!groups) {
    if (tags.includes(revision)) return revision;
    throw new Error(`invalid revision: failed to determine semver constraint: improper constraint: ${revision}`);
  }
  let best: { v: semver.SemVer; tag: string } | undefined;
  for (const tag of tags) {
    const v = parseVersion(tag);
    if (!v || !satisfies(groups, v)) continue;
    if (!best || semver.gt(v, best.v)) best = { v, tag };
  }
  if (!best) throw new Error(`invalid revision: version matching constraint not found in ${tags.length} tags`);
  return best.tag;
}
