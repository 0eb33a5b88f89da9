// The Impersonate-Extra headers that name what an impersonated request is made for (api/attribution.ts:
// the Application, its project, the revision), and what the controller does when the API server
// refuses them.
//
// The wire rules are kube-apiserver's impersonation filter's: a header `Impersonate-Extra-<key>`
// per value; the key is lower-cased and then percent-decoded by the server, so a key character
// that may not appear in a header name (`/` in `impersync.io/application`) is sent as `%XX`, as
// client-go does; the value is taken as it is, so it must be a valid header value. The server
// authorises each one as the verb `impersonate` on the resource `userextras/<key>` of the group
// `authentication.k8s.io` with the value as the resource name, at cluster scope (so only a
// ClusterRoleBinding can grant it), and refuses the whole request when one is not allowed. Extras
// need an impersonated user: the controller's own credential sends none.
import { attributionExtras } from '../api/index.ts';
import type { Attribution } from '../api/index.ts';
import type { KubeError } from './types.ts';

export const EXTRA_HEADER_PREFIX = 'impersonate-extra-';

// RFC 9110 token characters, less `%`, which the server decodes.
const HEADER_KEY_CHAR = /^[A-Za-z0-9!#$&'*+\-.^_`|~]$/;

/** A user-extra key as a header-name suffix: every byte outside the token set as `%XX`. */
export function escapeExtraKey(key: string): string {
  let out = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && HEADER_KEY_CHAR.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * A value as a header value. The server records values verbatim, so visible ASCII and spaces go
 * as they are; anything else (a non-ASCII branch name, a control character) is percent-encoded as
 * UTF-8 rather than sent as bytes the server would record as U+FFFD.
 */
export function escapeExtraValue(value: string): string {
  return value.replace(/[^\x20-\x7e]/gu, (ch) => encodeURIComponent(ch));
}

/** The headers of an attribution. */
export function extraHeaders(a: Attribution): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of attributionExtras(a))
    out[EXTRA_HEADER_PREFIX + escapeExtraKey(key)] = escapeExtraValue(value);
  return out;
}

export { isExtrasRefusal } from './types.ts';

/** How soon after a refusal the extras are offered again (the right may have been granted meanwhile). */
export const EXTRAS_RETRY_MS = 600_000;

/**
 * Whether one cluster credential may impersonate impersync's user extras, as learnt from the API
 * server: assumed yes until a request is refused for them, then not offered (requests go without
 * them) for EXTRAS_RETRY_MS, then offered again. `onRefused` is told once, at the first refusal.
 */
export class ExtrasGrant {
  readonly #onRefused: ((error: KubeError) => void) | undefined;
  readonly #now: () => number;
  #refusedUntil = 0;
  #told = false;

  constructor(opts: { onRefused?: ((error: KubeError) => void) | undefined; now?: () => number } = {}) {
    this.#onRefused = opts.onRefused;
    this.#now = opts.now ?? Date.now;
  }

  /** Send the extras with the next request (always when they are required). */
  offer(): boolean {
    return this.#now() >= this.#refusedUntil;
  }

  refused(error: KubeError): void {
    this.#refusedUntil = this.#now() + EXTRAS_RETRY_MS;
    if (this.#told) return;
    this.#told = true;
    this.#onRefused?.(error);
  }
}

/** The message of a request refused because its extras are required (argocd-cm requireExtras). */
export function requiredExtrasMessage(error: KubeError): string {
  return `${error.message} (argocd-cm sets impersync.impersonation.requireExtras: "true", so requests are not sent without the Application's extras: grant the controller impersonate on userextras/impersync.io/application, userextras/impersync.io/project and userextras/impersync.io/revision, docs/install.md)`;
}
