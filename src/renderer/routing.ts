// Which renderer replica a request goes to: rendezvous (highest-random-weight) hashing of the
// request's repository over the replica addresses known now. Every replica gets a score for the
// repository, and the replicas are tried in the order of their scores; a repository therefore
// keeps its replica for as long as that replica is there, and when one is added or removed only
// the repositories whose first choice it is (or becomes) move: about 1/N of them. Pure.
import { createHash } from 'node:crypto';

/**
 * The repository a request is routed by: the repoURL as given, trimmed. The renderer's caches start
 * from the same string (its clones are named by a digest of the trimmed URL, source/repo-url.ts;
 * its answers by the whole input, which holds it), so two requests that could share a clone or an
 * answer always have the same key and go to the same replica.
 */
export function routingKey(repoURL: string): string {
  return repoURL.trim();
}

/** The score of `replica` for `key`: the first 48 bits of a SHA-256 of both, as a number. */
function score(replica: string, key: string): number {
  return createHash('sha256').update(replica).update('\0').update(key).digest().readUIntBE(0, 6);
}

/**
 * The replicas in the order a request for `key` tries them: highest score first (ties, which need a
 * 48-bit collision, by address so that the order is still the same everywhere).
 */
export function rankReplicas(replicas: readonly string[], key: string): string[] {
  return [...new Set(replicas)]
    .map((replica) => ({ replica, score: score(replica, key) }))
    .sort((a, b) => b.score - a.score || (a.replica < b.replica ? -1 : a.replica > b.replica ? 1 : 0))
    .map((r) => r.replica);
}
