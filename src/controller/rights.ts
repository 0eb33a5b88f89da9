// Every right an identity lacks, at once (docs/impersonation.md §12). After a comparison or a sync
// was refused with a 403, the controller asks the API server, as the identity itself (impersonated
// SelfSubjectAccessReviews, which every authenticated user may create), about every verb and
// resource the rendered objects need in each namespace (rights-needs.ts), and names all those it
// is refused in one message:
//
//   ServiceAccount guestbook-dev:deployer may not: get, patch deployments.apps in guestbook-dev; get, patch services in guestbook-dev
//
// rather than the one Forbidden of the first request refused, and a different one at each retry.
// Answers are remembered per (destination, identity, right) for a minute, so a refused Application
// that is refreshed again and again costs a bounded number of reviews; the happy path asks none.
// `impersync explain --check-rights` asks the same before anything is synced.
import type { DestinationClient, Identity, ResourceInfo } from '../kube/types.ts';
import { serviceAccountFromUser } from '../api/index.ts';
import type { ObjectNeed, Verb } from './rights-needs.ts';
import { VERB_ORDER } from './rights-needs.ts';

/** The rights refused on one resource in one namespace ('' for cluster scope). */
export interface MissingRights {
  namespace: string;
  /** `deployments.apps`, `services`: the plural, dot, the group (none for the core group). */
  resource: string;
  verbs: Verb[];
}

export interface RightsReport {
  /** `ServiceAccount <ns>:<name>`, or `the controller's own credential`. */
  subject: string;
  /** What it may not do, by namespace and resource; empty when every right is held. */
  missing: MissingRights[];
  /** How many distinct rights (verb, resource, namespace) the objects need. */
  needed: number;
  /** Kinds the server does not serve (a CRD not yet installed): their rights could not be asked. */
  unknownKinds: string[];
}

export type RightsResult = { ok: true; report: RightsReport } | { ok: false; error: string };

/** The subject of the message: a ServiceAccount as `<ns>:<name>`, another user as its name. */
export function subjectOf(identity: Identity): string {
  if (!('impersonate' in identity)) return "the controller's own credential";
  const sa = serviceAccountFromUser(identity.impersonate);
  return sa ? `ServiceAccount ${sa.namespace}:${sa.name}` : `user ${identity.impersonate}`;
}

/** The one message naming every right refused, or undefined when none is. */
export function missingRightsMessage(report: RightsReport): string | undefined {
  if (report.missing.length === 0) return undefined;
  const parts = report.missing.map(
    (m) => `${m.verbs.join(', ')} ${m.resource} ${m.namespace ? `in ${m.namespace}` : 'at cluster scope'}`,
  );
  return `${report.subject} may not: ${parts.join('; ')}`;
}

const TTL_MS = 60_000;
const MAX_ANSWERS = 10_000;
const CONCURRENCY = 8;
const SSAR_PATH = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';

interface Right {
  verb: Verb;
  info: ResourceInfo;
  namespace: string;
}

function resourceName(info: ResourceInfo): string {
  return info.group ? `${info.resource}.${info.group}` : info.resource;
}

/** One per controller (or per `explain` run): the reviews' answers, remembered for a minute. */
export class RightsCheck {
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #answers = new Map<string, { allowed: boolean; at: number }>();

  constructor(opts: { ttlMs?: number; now?: () => number } = {}) {
    this.#ttlMs = opts.ttlMs ?? TTL_MS;
    this.#now = opts.now ?? Date.now;
  }

  /**
   * Which of the rights `needs` asks for the client's identity lacks. Objects without a namespace
   * that are namespaced are in `defaultNamespace` (the destination's). `fresh` (a hard refresh)
   * asks again rather than use remembered answers. An error when a review could not be made.
   */
  async check(
    client: DestinationClient,
    needs: readonly ObjectNeed[],
    opts: { defaultNamespace?: string | undefined; fresh?: boolean } = {},
  ): Promise<RightsResult> {
    const rights = new Map<string, Right>();
    const unknownKinds = new Set<string>();
    for (const need of needs) {
      const info = await this.#resolve(client, need);
      if (!info) {
        unknownKinds.add(need.group ? `${need.kind}.${need.group}` : need.kind);
        continue;
      }
      const namespace = info.namespaced ? (need.namespace ?? opts.defaultNamespace ?? '') : '';
      for (const verb of need.verbs)
        rights.set(`${verb} ${resourceName(info)} ${namespace}`, { verb, info, namespace });
    }
    const identity = 'impersonate' in client.identity ? client.identity.impersonate : 'controller';
    const refused: Right[] = [];
    const list = [...rights.values()];
    let failure: string | undefined;
    for (let i = 0; i < list.length && failure === undefined; i += CONCURRENCY) {
      const batch = list.slice(i, i + CONCURRENCY);
      const answers = await Promise.all(batch.map((r) => this.#allowed(client, identity, r, opts.fresh === true)));
      answers.forEach((a, j) => {
        if (typeof a === 'string') failure ??= a;
        else if (!a) refused.push(batch[j] as Right);
      });
    }
    if (failure !== undefined) return { ok: false, error: failure };
    return {
      ok: true,
      report: {
        subject: subjectOf(client.identity),
        missing: group(refused),
        needed: rights.size,
        unknownKinds: [...unknownKinds].sort(),
      },
    };
  }

  /**
   * After a comparison or sync that met `refusals` (403s; with none, nothing is asked): the message
   * naming every right the identity lacks, or undefined when it lacks none of them (the refusal was
   * something else: an admission policy, the impersonation itself) or the reviews failed (`onError`).
   * `needs` is only worked out when there was a refusal: the happy path does not pay for it.
   */
  async afterRefusals(
    client: DestinationClient,
    refusals: readonly string[],
    needs: () => readonly ObjectNeed[],
    opts: { defaultNamespace?: string | undefined; fresh?: boolean; onError?: (error: string) => void } = {},
  ): Promise<string | undefined> {
    if (refusals.length === 0) return undefined;
    const result = await this.check(client, needs(), opts);
    if (!result.ok) {
      opts.onError?.(result.error);
      return undefined;
    }
    return missingRightsMessage(result.report);
  }

  async #resolve(client: DestinationClient, need: ObjectNeed): Promise<ResourceInfo | undefined> {
    if (need.apiVersion) {
      const found = await client.resolve(need.apiVersion, need.kind);
      if (found.ok) return found.value;
    }
    const byGroup = await client.resolveGroupKind(need.group, need.kind);
    return byGroup.ok ? byGroup.value : undefined;
  }

  /** Whether the identity holds the right; a string when the review itself failed. */
  async #allowed(client: DestinationClient, identity: string, r: Right, fresh: boolean): Promise<boolean | string> {
    const key = [client.server, identity, r.verb, r.info.group, r.info.resource, r.namespace].join('\n');
    const now = this.#now();
    const known = this.#answers.get(key);
    if (!fresh && known && now - known.at < this.#ttlMs) return known.allowed;
    const res = await client.request<{ status?: { allowed?: boolean } }>({
      method: 'POST',
      path: SSAR_PATH,
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: {
          resourceAttributes: {
            verb: r.verb,
            group: r.info.group,
            resource: r.info.resource,
            ...(r.namespace ? { namespace: r.namespace } : {}),
          },
        },
      },
    });
    if (!res.ok) return `cannot ask which rights ${subjectOf(client.identity)} holds: ${res.error.message}`;
    const allowed = res.value.status?.allowed === true;
    this.#answers.delete(key);
    this.#answers.set(key, { allowed, at: now });
    if (this.#answers.size > MAX_ANSWERS) {
      const oldest = this.#answers.keys().next();
      if (!oldest.done) this.#answers.delete(oldest.value);
    }
    return allowed;
  }
}

/** Refused rights grouped by (namespace, resource), namespaces and resources in order, verbs in VERB_ORDER. */
function group(refused: readonly Right[]): MissingRights[] {
  const by = new Map<string, MissingRights>();
  for (const r of refused) {
    const resource = resourceName(r.info);
    const key = `${r.namespace}\n${resource}`;
    const entry = by.get(key) ?? { namespace: r.namespace, resource, verbs: [] };
    if (!entry.verbs.includes(r.verb)) entry.verbs.push(r.verb);
    by.set(key, entry);
  }
  const out = [...by.values()];
  for (const m of out) m.verbs.sort((a, b) => VERB_ORDER.indexOf(a) - VERB_ORDER.indexOf(b));
  return out.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.resource.localeCompare(b.resource));
}
