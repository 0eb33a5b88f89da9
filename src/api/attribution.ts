// What a request made for an Application says about it, beyond who it acts as: the user extras
// impersync adds to every impersonated request it makes for one Application (Impersonate-Extra-*,
// kube/attribution.ts). The API server records them in the audit log's `impersonatedUser.extra`
// and hands them to admission as `request.userInfo.extra`, so these keys are a contract with
// audit pipelines and admission policies (deploy/admission/examples/): named once, here.

/** The Application a request is made for, as `<namespace>/<name>`. */
export const EXTRA_APPLICATION = 'impersync.io/application';
/** The Application's AppProject. */
export const EXTRA_PROJECT = 'impersync.io/project';
/** The revision being compared or synced (the commit the renderer resolved). */
export const EXTRA_REVISION = 'impersync.io/revision';

/** Every key, in the order requests carry them; the install grants `impersonate` on exactly these. */
export const EXTRA_KEYS: readonly string[] = [EXTRA_APPLICATION, EXTRA_PROJECT, EXTRA_REVISION];

/** What a request is made for. */
export interface Attribution {
  /** `<namespace>/<name>` of the Application. */
  application: string;
  project: string;
  /** The revision compared or synced; absent when none is known (deleting an Application never compared). */
  revision?: string | undefined;
}

/** The extras of an attribution, key → value, in EXTRA_KEYS order; an absent revision is left out. */
export function attributionExtras(a: Attribution): Array<[string, string]> {
  const out: Array<[string, string]> = [
    [EXTRA_APPLICATION, a.application],
    [EXTRA_PROJECT, a.project],
  ];
  if (a.revision !== undefined && a.revision !== '') out.push([EXTRA_REVISION, a.revision]);
  return out;
}
