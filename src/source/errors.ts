// The one error type of source/: its message is written to be shown as is, in an Application's
// ComparisonError condition, so it names the repository, revision, file or tool concerned.

/** What went wrong, for callers that react differently (retry later, or wait for a new commit). */
export type SourceErrorReason =
  | 'RepositoryUnreachable' // git could not reach the repository (network, auth, does not exist)
  | 'RevisionNotFound' // the repository answered, the revision is not in it
  | 'ToolMissing' // git, kustomize or helm is not installed where we look
  | 'ToolFailed' // git, kustomize or helm ran and failed (its stderr is in the message)
  | 'Timeout' // a command ran past its time limit and was killed
  | 'TooLarge' // a file or a tool's output exceeded the size limit
  | 'InvalidSource' // the Application's source is unusable (bad path, conflicting types, ...)
  | 'InvalidManifest' // a file does not parse, or holds something that is not a Kubernetes object
  | 'RendererUnavailable' // the controller could not reach the renderer process, or it refused the request
  | 'IntegrityFailed' // the revision fails the project's source integrity check: the message is Argo CD's condition
  | 'Unexpected'; // anything else (a filesystem error, say): a bug or a broken machine

export class SourceError extends Error {
  override readonly name = 'SourceError';
  readonly reason: SourceErrorReason;

  constructor(reason: SourceErrorReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

/**
 * The sources whose revisions failed the project's source integrity check: one ComparisonError
 * condition each, its message Argo CD's as is (controller/render.ts).
 */
export class SourceIntegrityFailed extends SourceError {
  readonly messages: readonly string[];

  constructor(messages: readonly string[]) {
    super('IntegrityFailed', messages.join('\n'));
    this.messages = messages;
  }
}

/**
 * Removes a password or token from a URL before it is shown (`https://user:***@host/repo`). The
 * user information runs to the last `@` before the path, as URL parsers read it, so a password
 * holding an `@` is hidden whole. Over HTTP(S) a user name alone is hidden too (`https://***@host`):
 * that is where a token goes in `https://<token>@github.com/...`. SSH user names (`ssh://git@`)
 * carry no secret (the key is the credential) and stay, as they say which account is used.
 */
export function redactURL(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/]*)@/i, (_m, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    if (colon >= 0) return `${scheme}${userinfo.slice(0, colon)}:***@`;
    return /^https?:\/\/$/i.test(scheme) ? `${scheme}***@` : `${scheme}${userinfo}@`;
  });
}

/**
 * A fetched document (an index.yaml, a registry's JSON, a file of a downloaded chart) that does not
 * parse as `format`: `what` it is, naming its URL redacted, and its size, never what it says. The
 * server may be one a tenant made the renderer reach, and parsers quote what they read.
 */
export function unparsable(
  what: string,
  format: string,
  bytes: number,
  reason: SourceErrorReason = 'InvalidSource',
): SourceError {
  return new SourceError(reason, `${what} does not parse as ${format} (${bytes} bytes; its content is not shown)`);
}

/** A size for a message: `32 MiB`, `64 KiB`, `100 bytes`. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${Math.round(n / (1024 * 1024))} MiB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KiB`;
  return `${n} bytes`;
}

/** A repository named by tenant content (a Chart.yaml dependency) whose credentials the controller decides. */
export interface RepositoryNeed {
  url?: string | undefined;
  name?: string | undefined;
  /** A Git submodule's repository (submodules.ts), not a chart repository: it gets a source's credentials. */
  submodule?: boolean | undefined;
}

/**
 * Not a failure: the chart has dependencies in repositories the request said nothing about. The
 * renderer answers with them (409), the controller resolves their credentials against its
 * repository Secrets and the project, and asks again with `dependencyRepositories` set.
 */
export class NeedsRepositories extends SourceError {
  readonly needs: RepositoryNeed[];
  constructor(needs: RepositoryNeed[]) {
    super(
      'InvalidSource',
      `${needs.some((n) => n.submodule) ? 'the submodules or ' : ''}the chart's dependencies need repositories: ${needs.map((n) => n.url ?? `@${n.name}`).join(', ')}`,
    );
    this.needs = needs;
  }
}
