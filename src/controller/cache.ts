// The controller's view of its control cluster: one Watch per kind it reads (Applications,
// AppProjects, argocd-cm, cluster Secrets), with typed, parsed accessors for the reconciler. The
// watches run over the controller's control-cluster connection (kube/control.ts).
import {
  parseAppProject,
  parseClusterSecret,
  parseConfigMap,
  isInClusterEnabled,
  ARGOCD_CM,
  SECRET_TYPE_LABEL,
} from '../api/index.ts';
import type { AppProject, Cluster, ConfigMap } from '../api/index.ts';
import { globMatch } from '../impersonation/glob.ts';
import { readImpersonationSettings } from '../impersonation/settings.ts';
import type { WatchTransport } from '../kube/watch.ts';
import { Watch } from '../kube/watch.ts';
import type { WatchedObject } from '../kube/watch.ts';
import type { ControlState } from './admission.ts';
import {
  REPOSITORY_SECRET_TYPES,
  SSH_KNOWN_HOSTS_CM,
  SSH_KNOWN_HOSTS_KEY,
  TLS_CERTS_CM,
  parseRepositorySecret,
} from '../api/repository.ts';
import { RepositorySecretError, type RepositoryConfig } from '../api/repository.ts';
import type { RepositoryState } from '../repository/access.ts';

export const GPG_KEYS_CM = 'argocd-gpg-keys-cm';

/** The repository state a render is given, and the Secrets that do not parse, with the URL each is for. */
export interface ControllerRepositoryState extends RepositoryState {
  unreadable: readonly RepositorySecretError[];
}

export interface CacheOptions {
  /** The control namespace (argocd): projects, argocd-cm, cluster Secrets, and Applications. */
  namespace: string;
  /** Globs of further namespaces whose Applications are reconciled (apps in any namespace). */
  applicationNamespaces: string[];
  resyncMs?: number;
  livenessMs?: number;
  onError?: (what: string, err: Error) => void;
  /** ARGOCD_GPG_ENABLED as read at start: false turns commit signature verification off. */
  gpgEnabled?: boolean;
}

export class ControllerCache {
  readonly apps: Watch;
  readonly projects: Watch;
  readonly configMaps: Watch;
  readonly secrets: Watch;
  /** Repository Secrets and credential templates (issue 13), and the two ConfigMaps of known hosts and CAs. */
  readonly repoSecrets: Watch;
  readonly knownHostsCM: Watch;
  /** argocd-gpg-keys-cm: the public keys commit signatures are verified with. */
  readonly gpgKeysCM: Watch;
  private readonly gpgEnabled: boolean;
  readonly tlsCertsCM: Watch;
  readonly namespace: string;
  private readonly parsedRepos = new WeakMap<WatchedObject, RepositoryConfig | Error>();
  private readonly appNamespaces: string[];
  private readonly parsedProjects = new WeakMap<WatchedObject, AppProject | Error>();
  #settings: { raw: WatchedObject; parsed: ConfigMap | Error } | undefined;

  constructor(transport: WatchTransport, opts: CacheOptions) {
    this.namespace = opts.namespace;
    this.gpgEnabled = opts.gpgEnabled !== false;
    this.appNamespaces = opts.applicationNamespaces;
    const ns = encodeURIComponent(opts.namespace);
    const common = {
      ...(opts.resyncMs !== undefined ? { resyncMs: opts.resyncMs } : {}),
      ...(opts.livenessMs !== undefined ? { livenessMs: opts.livenessMs } : {}),
    };
    const err = (what: string) => (e: Error) => opts.onError?.(what, e);
    // Apps in any namespace need a cluster-wide watch, filtered by the namespace globs below.
    const appsPath =
      this.appNamespaces.length > 0
        ? '/apis/argoproj.io/v1alpha1/applications'
        : `/apis/argoproj.io/v1alpha1/namespaces/${ns}/applications`;
    this.apps = new Watch(transport, {
      path: appsPath,
      kind: 'Application',
      apiVersion: 'argoproj.io/v1alpha1',
      ...common,
      onError: err('applications'),
    });
    this.projects = new Watch(transport, {
      path: `/apis/argoproj.io/v1alpha1/namespaces/${ns}/appprojects`,
      kind: 'AppProject',
      apiVersion: 'argoproj.io/v1alpha1',
      ...common,
      onError: err('appprojects'),
    });
    this.configMaps = new Watch(transport, {
      path: `/api/v1/namespaces/${ns}/configmaps`,
      kind: 'ConfigMap',
      apiVersion: 'v1',
      fieldSelector: `metadata.name=${ARGOCD_CM}`,
      ...common,
      onError: err('argocd-cm'),
    });
    this.secrets = new Watch(transport, {
      path: `/api/v1/namespaces/${ns}/secrets`,
      kind: 'Secret',
      apiVersion: 'v1',
      labelSelector: `${SECRET_TYPE_LABEL}=cluster`,
      ...common,
      onError: err('cluster secrets'),
    });
    this.repoSecrets = new Watch(transport, {
      path: `/api/v1/namespaces/${ns}/secrets`,
      kind: 'Secret',
      apiVersion: 'v1',
      labelSelector: `${SECRET_TYPE_LABEL} in (${REPOSITORY_SECRET_TYPES.join(',')})`,
      ...common,
      onError: err('repository secrets'),
    });
    // Each ConfigMap by name (a label selector cannot pick them: users' copies may not be labelled).
    const byName = (name: string) =>
      new Watch(transport, {
        path: `/api/v1/namespaces/${ns}/configmaps`,
        kind: 'ConfigMap',
        apiVersion: 'v1',
        fieldSelector: `metadata.name=${name}`,
        ...common,
        onError: err(name),
      });
    this.knownHostsCM = byName(SSH_KNOWN_HOSTS_CM);
    this.tlsCertsCM = byName(TLS_CERTS_CM);
    this.gpgKeysCM = byName(GPG_KEYS_CM);
  }

  watches(): Array<[string, Watch]> {
    return [
      ['applications', this.apps],
      ['appprojects', this.projects],
      ['argocd-cm', this.configMaps],
      ['cluster-secrets', this.secrets],
      ['repository-secrets', this.repoSecrets],
      [SSH_KNOWN_HOSTS_CM, this.knownHostsCM],
      [TLS_CERTS_CM, this.tlsCertsCM],
      [GPG_KEYS_CM, this.gpgKeysCM],
    ];
  }

  /**
   * Repository Secrets, credential templates, known hosts and CA certificates as the caches hold
   * them now: a change takes effect at the next render, no restart.
   */
  repositoryState(): ControllerRepositoryState {
    const configs: RepositoryConfig[] = [];
    const errors: string[] = [];
    const unreadable: RepositorySecretError[] = [];
    for (const raw of this.repoSecrets.list()) {
      let parsed = this.parsedRepos.get(raw);
      if (parsed === undefined) {
        try {
          parsed = parseRepositorySecret(raw);
        } catch (err) {
          parsed = err as Error;
        }
        this.parsedRepos.set(raw, parsed);
      }
      if (parsed instanceof RepositorySecretError) unreadable.push(parsed);
      if (parsed instanceof Error) errors.push(parsed.message);
      else configs.push(parsed);
    }
    // Without a prototype: a host is looked up by name, and a repository URL's host may be `constructor`.
    const data = (watch: Watch, name: string): Record<string, string> => {
      const raw = watch.get(`${this.namespace}/${name}`);
      const d = (raw as { data?: unknown } | undefined)?.data;
      const out = Object.create(null) as Record<string, string>;
      if (!d || typeof d !== 'object') return out;
      for (const [k, v] of Object.entries(d)) if (typeof v === 'string') out[k] = v;
      return out;
    };
    return {
      configs,
      errors,
      unreadable,
      knownHosts: data(this.knownHostsCM, SSH_KNOWN_HOSTS_CM)[SSH_KNOWN_HOSTS_KEY] ?? '',
      tlsCerts: data(this.tlsCertsCM, TLS_CERTS_CM),
      gpgKeys: data(this.gpgKeysCM, GPG_KEYS_CM),
      gpgEnabled: this.gpgEnabled,
    };
  }

  start(): void {
    for (const [, w] of this.watches()) w.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.watches().map(([, w]) => w.stop()));
  }

  async synced(): Promise<void> {
    await Promise.all(this.watches().map(([, w]) => w.synced));
  }

  /** Empty when every cache has listed once; otherwise which have not (readiness). */
  notSynced(): string {
    return this.watches()
      .filter(([, w]) => !w.isSynced)
      .map(([n]) => n)
      .join(', ');
  }

  /** Whether Applications of this namespace are reconciled at all (the control namespace always). */
  watchesNamespace(namespace: string): boolean {
    return namespace === this.namespace || this.appNamespaces.some((g) => globMatch(g, namespace));
  }

  /** The raw Application as last seen, or undefined. */
  app(key: string): WatchedObject | undefined {
    return this.apps.get(key);
  }

  appKeys(): string[] {
    return [...this.apps.store.keys()].filter((k) => this.watchesNamespace(k.slice(0, k.indexOf('/'))));
  }

  /** Every AppProject, parsed, or the Error it does not parse with. */
  private parsedAll(): Array<{ name: string; project: AppProject | Error }> {
    return this.projects.list().map((raw) => ({ name: raw.metadata.name, project: this.parsed(raw) }));
  }

  /**
   * Parsed once per stored object (the store replaces an object when it changes): every reconcile
   * needs all projects for global-project inheritance.
   */
  private parsed(raw: WatchedObject): AppProject | Error {
    let parsed = this.parsedProjects.get(raw);
    if (parsed === undefined) {
      try {
        parsed = parseAppProject(raw);
      } catch (err) {
        parsed = err as Error; // reported where the project is used
      }
      this.parsedProjects.set(raw, parsed);
    }
    return parsed;
  }

  /** The AppProject of that name, when it exists and parses. */
  project(name: string): AppProject | undefined {
    const raw = this.projects.get(`${this.namespace}/${name}`);
    const parsed = raw ? this.parsed(raw) : undefined;
    return parsed instanceof Error ? undefined : parsed;
  }

  /** Every AppProject that parses; a broken one is reported by the reconcile that needs it. */
  allProjects(): AppProject[] {
    return this.parsedAll().flatMap((p) => (p.project instanceof Error ? [] : [p.project]));
  }

  /** What the admission gate reads (admission.ts): settings, cluster Secrets, AppProjects. */
  controlState(): ControlState {
    const projects: AppProject[] = [];
    const projectErrors = new Map<string, string>();
    for (const p of this.parsedAll()) {
      if (p.project instanceof Error) projectErrors.set(p.name, p.project.message);
      else projects.push(p.project);
    }
    const { clusters, errors } = this.clusters();
    return {
      namespace: this.namespace,
      settings: readImpersonationSettings(this.settingsConfigMap()),
      clusters,
      clusterErrors: errors,
      inClusterEnabled: isInClusterEnabled(this.settingsConfigMap()),
      projects,
      projectErrors,
    };
  }

  /**
   * argocd-cm, parsed; a ConfigMap that does not parse is an Error (settings take defaults, spec §4).
   * Parsed once per stored object, as the projects are: a refresh reads it several times, and so
   * does every live-object change.
   */
  settingsConfigMap(): ConfigMap | undefined | Error {
    const raw = this.configMaps.get(`${this.namespace}/${ARGOCD_CM}`);
    if (!raw) return undefined;
    if (this.#settings?.raw === raw) return this.#settings.parsed;
    let parsed: ConfigMap | Error;
    try {
      parsed = parseConfigMap(raw);
    } catch (err) {
      parsed = err as Error;
    }
    this.#settings = { raw, parsed };
    return parsed;
  }

  /** Cluster Secrets, parsed; a broken one is listed in `errors` with its name and field. */
  clusters(): { clusters: Cluster[]; errors: string[] } {
    const clusters: Cluster[] = [];
    const errors: string[] = [];
    for (const raw of this.secrets.list()) {
      try {
        clusters.push(parseClusterSecret(raw));
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    return { clusters, errors };
  }
}
