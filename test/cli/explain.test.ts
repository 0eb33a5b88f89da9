// `impersync explain`: flags, the JSON document, the text trace, and exit codes (issue 2).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { run } from '../../src/cli/explain.ts';
import { ENABLED_CM, appYaml, projectYaml, repoFile, runCommand, writeFiles } from './helpers.ts';

const IN = 'https://kubernetes.default.svc';
const ENTRIES = `
    - {server: '${IN}', namespace: guestbook, defaultServiceAccount: guestbook-deployer}
    - {server: '${IN}', namespace: 'guestbook-*', defaultServiceAccount: generic}`;

function files(extra: Record<string, string> = {}) {
  return writeFiles({
    'cm.yaml': ENABLED_CM,
    'app.yaml': appYaml('guestbook', `{server: '${IN}', namespace: guestbook}`),
    'project.yaml': projectYaml('my-project', ENTRIES),
    ...extra,
  });
}

/**
 * A project inheriting `entries` from a global project: spec §8 validates a project's own entries
 * (the controller refuses an invalid one before deciding), so an invalid pattern reaches the
 * identity decision (outcome error) only from a global project (spec §7).
 */
function inheriting(entries: string) {
  return files({
    'cm.yaml':
      ENABLED_CM +
      '  globalProjects: |\n    - projectName: shared\n      labelSelector: {matchLabels: {tenant: "true"}}\n',
    'project.yaml':
      projectYaml('my-project', '[]', ', labels: {tenant: "true"}') + '---\n' + projectYaml('shared', entries),
  });
}

const json = async (argv: string[], stdin?: string) => {
  const r = await runCommand(run, [...argv, '-o', 'json'], stdin);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as Record<string, unknown>;
};

/** The controller refuses the Application before deciding its identity: the answer on stdout, exit 3. */
const refusedAnswer = async (argv: string[]) => {
  const text = await runCommand(run, argv);
  assert.equal(text.code, 3, `expected exit 3, got ${text.code}: ${text.stdout}${text.stderr}`);
  assert.equal(text.stderr, '');
  assert.match(
    text.stdout,
    /\nREFUSED: the controller neither compares nor syncs it, and decides no identity for it \(InvalidSpecError\)\n/,
  );
  const json = await runCommand(run, [...argv, '-o', 'json']);
  assert.equal(json.code, 3);
  const report = JSON.parse(json.stdout) as { decision: string; condition: string; message: string };
  assert.equal(report.decision, 'refused');
  assert.equal(report.condition, 'InvalidSpecError');
  assert.ok(text.stdout.includes(`  message: ${report.message}\n`), text.stdout);
  return report.message;
};

const unusable = async (argv: string[], stdin?: string) => {
  const r = await runCommand(run, argv, stdin);
  assert.equal(r.code, 2, `expected exit 2, got ${r.code}: ${r.stdout}`);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr.split('\n').filter((l) => l !== '').length, 1, `one stderr line: ${r.stderr}`);
  return r.stderr.trim();
};

describe('explain -o json', () => {
  test('prints exactly one JSON object with the fields of the issue, in order', async () => {
    const f = files();
    const out = await json(['-f', f['cm.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.deepEqual(Object.keys(out), [
      'application',
      'project',
      'destination',
      'resolvedServer',
      'impersonation',
      'decision',
      'serviceAccount',
      'matched',
      'message',
      'warnings',
    ]);
    assert.deepEqual(out, {
      application: 'argocd/guestbook',
      project: 'my-project',
      destination: { server: IN, name: '', namespace: 'guestbook' },
      resolvedServer: IN,
      impersonation: { enabled: true, enforced: true },
      decision: 'impersonate',
      serviceAccount: 'system:serviceaccount:guestbook:guestbook-deployer',
      matched: {
        index: 0,
        server: IN,
        namespace: 'guestbook',
        defaultServiceAccount: 'guestbook-deployer',
        fromProject: 'my-project',
      },
      message: '',
      warnings: [],
    });
  });

  test("deny carries spec §5's operation message", async () => {
    const f = files({ 'app.yaml': appYaml('guestbook', `{server: '${IN}', namespace: other}`) });
    const out = await json(['-f', f['cm.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.equal(out.decision, 'deny');
    assert.equal(out.serviceAccount, null);
    assert.equal(out.matched, null);
    assert.equal(out.message, `no matching service account found for destination server ${IN} and namespace other`);
  });

  test("fallback carries spec §5's info line", async () => {
    const f = files({
      'cm.yaml': ENABLED_CM + '  application.sync.impersonation.enforced: "false"\n',
      'app.yaml': appYaml('guestbook', `{server: '${IN}', namespace: other}`),
    });
    const out = await json(['-f', f['cm.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.equal(out.decision, 'fallback');
    assert.deepEqual(out.impersonation, { enabled: true, enforced: false });
    assert.equal(
      out.message,
      `no matching service account found for impersonation (project: my-project, server: ${IN}, namespace: other), falling back to controller service account`,
    );
  });

  test("error carries spec §5's operation message", async () => {
    const f = inheriting(`\n    - {server: '[', namespace: guestbook, defaultServiceAccount: x}`);
    const out = await json(['-f', f['cm.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.equal(out.decision, 'error');
    assert.equal(
      out.message,
      'failed to derive service account to impersonate: invalid glob pattern for destination server: unexpected end of input',
    );
  });

  test('"Without an argocd-cm document the settings take their defaults (spec §4) and a warning says so"; §10 warns too', async () => {
    const f = files();
    const out = await json(['-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.equal(out.decision, 'disabled');
    assert.deepEqual(out.impersonation, { enabled: false, enforced: true });
    assert.equal(out.message, '');
    const warnings = out.warnings as string[];
    assert.equal(warnings.length, 2);
    assert.match(
      warnings[0]!,
      /^no argocd-cm ConfigMap in .*: impersonation settings take their defaults \(enabled: false, enforced: true\)$/,
    );
    assert.match(
      warnings[1]!,
      /^AppProject 'my-project' has 2 destinationServiceAccounts entries, but sync impersonation is disabled/,
    );
  });

  test('"The in-cluster destination (name in-cluster) needs no Secret"; a remote one resolves through its Secret', async () => {
    const f = files({
      'app.yaml': appYaml('guestbook', '{name: in-cluster, namespace: guestbook}'),
      'remote.yaml':
        appYaml('remote', '{name: remote-cluster, namespace: guestbook}') +
        `---
apiVersion: v1
kind: Secret
metadata: {name: remote, namespace: argocd, labels: {argocd.argoproj.io/secret-type: cluster}}
stringData: {name: remote-cluster, server: 'https://remote:6443'}
`,
    });
    const local = await json(['-f', f['cm.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.equal(local.resolvedServer, IN);
    assert.deepEqual(local.destination, { server: '', name: 'in-cluster', namespace: 'guestbook' });
    const remote = await json(['-f', f['cm.yaml']!, '-f', f['remote.yaml']!, '-f', f['project.yaml']!]);
    assert.equal(remote.resolvedServer, 'https://remote:6443');
    assert.equal(remote.decision, 'deny', 'the entries name the in-cluster server only');
  });

  test('entries inherited from a global project are explained with fromProject', async () => {
    const f = files({
      'cm.yaml':
        ENABLED_CM +
        '  globalProjects: |\n    - projectName: shared\n      labelSelector: {matchLabels: {tenant: "true"}}\n',
      'project.yaml':
        projectYaml('my-project', '[]', ', labels: {tenant: "true"}') +
        '---\n' +
        projectYaml('shared', `\n    - {server: '*', namespace: '*', defaultServiceAccount: 'shared:deployer'}`),
    });
    const out = await json(['-f', f['cm.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.equal(out.serviceAccount, 'system:serviceaccount:shared:deployer');
    assert.equal((out.matched as { fromProject: string }).fromProject, 'shared');
  });

  test('reads stdin with -f -, JSON documents too', async () => {
    const app = {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'j', namespace: 'argocd' },
      spec: { project: 'my-project', destination: { server: IN, namespace: 'guestbook-x' } },
    };
    const f = files();
    const out = await json(['-f', f['cm.yaml']!, '-f', '-', '-f', f['project.yaml']!], JSON.stringify(app));
    assert.equal(out.serviceAccount, 'system:serviceaccount:guestbook-x:generic');
  });

  test('--app accepts NAMESPACE/NAME or NAME; an Application without a namespace is in --namespace', async () => {
    const f = files({
      'apps.yaml':
        appYaml('a', `{server: '${IN}', namespace: guestbook}`) +
        '---\n' +
        appYaml('b', `{server: '${IN}', namespace: guestbook-b}`, 'my-project', 'team'),
      'project.yaml': projectYaml('my-project', ENTRIES).replace(
        "sourceRepos: ['*']",
        "sourceRepos: ['*']\n  sourceNamespaces: [team]",
      ),
    });
    const base = ['-f', f['cm.yaml']!, '-f', f['apps.yaml']!, '-f', f['project.yaml']!];
    assert.equal(
      (await json([...base, '--app', 'argocd/a'])).serviceAccount,
      'system:serviceaccount:guestbook:guestbook-deployer',
    );
    assert.equal((await json([...base, '--app', 'b'])).application, 'team/b');
    const noNs = files({
      'app.yaml':
        'apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: bare}\nspec: {project: my-project, destination: {server: "' +
        IN +
        '"}}\n',
      // The controller reads projects of its own namespace only: this one, too, has none written.
      'project.yaml': projectYaml('my-project', ENTRIES).replace('namespace: argocd}', '}'),
    });
    const out = await json([
      '-f',
      noNs['cm.yaml']!,
      '-f',
      noNs['app.yaml']!,
      '-f',
      noNs['project.yaml']!,
      '-n',
      'tenant-cd',
    ]);
    assert.equal(out.application, 'tenant-cd/bare');
  });

  test('the project "default" left out is refused as the controller refuses it: no built-in one stands in', async () => {
    const f = files({ 'app.yaml': appYaml('guestbook', `{server: '${IN}', namespace: guestbook}`, '""') });
    assert.equal(
      await refusedAnswer(['-f', f['cm.yaml']!, '-f', f['app.yaml']!]),
      'Application referencing project default which does not exist',
    );
  });

  test("what the controller refuses before deciding is answered with the controller's message, exit 3", async () => {
    const elsewhere = files({
      'app.yaml': appYaml('guestbook', `{server: '${IN}', namespace: guestbook}`, 'my-project', 'team'),
    });
    assert.equal(
      await refusedAnswer([
        '-f',
        elsewhere['cm.yaml']!,
        '-f',
        elsewhere['app.yaml']!,
        '-f',
        elsewhere['project.yaml']!,
      ]),
      "application 'guestbook' in namespace 'team' is not permitted to use project 'my-project' (spec.sourceNamespaces)",
    );
  });

  test('an invalid entry after the one that decides refuses nothing, and is named in the warnings', async () => {
    const invalid = files({
      'project.yaml': projectYaml(
        'my-project',
        ENTRIES + `\n    - {server: '!x', namespace: '*', defaultServiceAccount: 'bad*sa'}`,
      ),
    });
    const out = await json(['-f', invalid['cm.yaml']!, '-f', invalid['app.yaml']!, '-f', invalid['project.yaml']!]);
    assert.equal(out.decision, 'impersonate');
    assert.deepEqual(
      (out.warnings as string[]).filter((w) => w.startsWith('AppProject my-project:')),
      [
        "AppProject my-project: spec.destinationServiceAccounts[2].server: server has an invalid format, '!x' (Argo CD's API server would refuse this project; a sync whose walk reaches this entry fails)",
        "AppProject my-project: spec.destinationServiceAccounts[2].defaultServiceAccount: defaultServiceAccount has an invalid format, 'bad*sa' (Argo CD's API server would refuse this project; a sync whose walk reaches this entry fails)",
      ],
    );
  });
});

describe('explain -o text', () => {
  test('shows each entry tried in order, whether server and namespace matched, the deciding entry and the outcome', async () => {
    const f = files({
      'app.yaml': appYaml('guestbook', `{server: '${IN}', namespace: guestbook-dev}`),
      'project.yaml': projectYaml(
        'my-project',
        ENTRIES + `\n    - {server: '*', namespace: '*', defaultServiceAccount: never}`,
      ),
    });
    const r = await runCommand(run, ['-f', f['cm.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.equal(r.code, 0);
    const lines = r.stdout.split('\n');
    assert.ok(lines.includes('Application:   argocd/guestbook'));
    assert.ok(
      lines.some(
        (l) => l.startsWith('  [0]') && l.includes("namespace 'guestbook' does not match") && l.endsWith(': no match'),
      ),
    );
    assert.ok(
      lines.some(
        (l) =>
          l.startsWith('  [1]') &&
          l.includes("server 'https://kubernetes.default.svc' matches") &&
          l.includes("namespace 'guestbook-*' matches") &&
          l.endsWith('MATCH, this entry decides'),
      ),
    );
    assert.ok(lines.includes('  ... 1 later entry not looked at (the first match decides)'));
    assert.ok(lines.includes('IMPERSONATE system:serviceaccount:guestbook-dev:generic'));
  });

  test('names the invalid pattern and the error outcome', async () => {
    const f = inheriting(`\n    - {server: '${IN}', namespace: '[z-a]', defaultServiceAccount: x}`);
    const r = await runCommand(run, [
      '-f',
      f['cm.yaml']!,
      '-f',
      f['app.yaml']!,
      '-f',
      f['project.yaml']!,
      '-o',
      'text',
    ]);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /namespace '\[z-a\]' is not a valid glob/);
    assert.match(
      r.stdout,
      /ERROR: the sync fails with phase Error\n {2}message: failed to derive service account to impersonate: invalid glob pattern for destination namespace: hi character 'a' should be greater than lo 'z'/,
    );
  });

  test('beyond Argo CD: a kube-system ServiceAccount is refused, naming it, until argocd-cm allows it', async () => {
    const f = files({
      'app.yaml': appYaml('sys', `{server: '${IN}', namespace: kube-system}`),
      'project.yaml': projectYaml(
        'my-project',
        `\n    - {server: '${IN}', namespace: '*', defaultServiceAccount: deployer}`,
      ),
      'allow.yaml': ENABLED_CM + '  impersync.impersonation.allowSystemNamespaces: "true"\n',
    });
    const refused = await json(['-f', f['cm.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.equal(refused['decision'], 'error');
    assert.equal(refused['serviceAccount'], null);
    assert.equal(
      refused['message'],
      'refusing to impersonate system:serviceaccount:kube-system:deployer: ServiceAccounts in kube-system, kube-public and kube-node-lease are not impersonated unless argocd-cm sets impersync.impersonation.allowSystemNamespaces: "true"',
    );
    const text = await runCommand(run, ['-f', f['cm.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.match(text.stdout, /MATCH, this entry decides/);
    assert.match(
      text.stdout,
      /ERROR: the sync fails with phase Error\n {2}message: refusing to impersonate system:serviceaccount:kube-system:deployer: /,
    );
    const allowed = await json(['-f', f['allow.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.equal(allowed['decision'], 'impersonate');
    assert.equal(allowed['serviceAccount'], 'system:serviceaccount:kube-system:deployer');
    const allowedText = await runCommand(run, ['-f', f['allow.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.match(
      allowedText.stdout,
      /^Impersonation: enabled, enforced, ServiceAccounts in system namespaces allowed \(from argocd-cm\)$/m,
    );
  });

  test('shows warnings', async () => {
    const f = files();
    const r = await runCommand(run, ['-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.match(r.stdout, /^DISABLED/m);
    assert.match(r.stdout, /^warning: no argocd-cm ConfigMap/m);
  });
});

describe('explain: unusable input exits 2 with one stderr line naming file, document and field', () => {
  test('a missing file', async () => {
    assert.equal(
      await unusable(['-f', '/nonexistent/app.yaml']),
      'impersync explain: /nonexistent/app.yaml: cannot read: no such file',
    );
  });

  test('broken YAML names the file and line', async () => {
    const f = writeFiles({ 'bad.yaml': 'apiVersion: v1\nkind: [\n' });
    assert.match(await unusable(['-f', f['bad.yaml']!]), /^impersync explain: .*bad\.yaml:\d+: /);
  });

  test('a document that does not fit its schema names file, document, object and field', async () => {
    const f = files({
      'project.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n---\n' +
        projectYaml('my-project', `\n    - {namespace: guestbook, defaultServiceAccount: x}`),
    });
    const line = await unusable(['-f', f['cm.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!]);
    assert.match(
      line,
      /project\.yaml: document 2: AppProject argocd\/my-project: spec\.destinationServiceAccounts\[0\]\.server: required field is missing/,
    );
  });

  test('no Application, or several without --app', async () => {
    const f = files({ 'two.yaml': appYaml('a', `{server: '${IN}'}`) + '---\n' + appYaml('b', `{server: '${IN}'}`) });
    assert.match(await unusable(['-f', f['project.yaml']!]), /no Application in .*project\.yaml/);
    assert.match(
      await unusable(['-f', f['two.yaml']!, '-f', f['project.yaml']!]),
      /2 Applications in .* \(argocd\/a, argocd\/b\); choose one with --app NAMESPACE\/NAME/,
    );
    assert.match(
      await unusable(['-f', f['two.yaml']!, '--app', 'argocd/c']),
      /--app argocd\/c: no such Application .* \(found: argocd\/a, argocd\/b\)/,
    );
  });

  test("the project not found is the controller's refusal, not unusable input", async () => {
    const f = files();
    assert.equal(
      await refusedAnswer(['-f', f['app.yaml']!]),
      'Application referencing project my-project which does not exist',
    );
  });

  test("the destination cluster not found is the controller's refusal, naming the field", async () => {
    const f = files({ 'app.yaml': appYaml('guestbook', '{name: remote-cluster, namespace: guestbook}') });
    assert.match(
      await refusedAnswer(['-f', f['app.yaml']!, '-f', f['project.yaml']!]),
      /^spec\.destination\.name: destination cluster name 'remote-cluster' not found/,
    );
  });

  test('a broken cluster Secret names its field', async () => {
    const f = files({
      'secret.yaml':
        'apiVersion: v1\nkind: Secret\nmetadata: {name: c, namespace: argocd, labels: {argocd.argoproj.io/secret-type: cluster}}\nstringData: {name: c, server: "https://c", config: "{not json"}\n',
    });
    assert.match(
      await unusable(['-f', f['secret.yaml']!, '-f', f['app.yaml']!]),
      /secret\.yaml: document 1: Secret argocd\/c: stringData\.config: not valid JSON/,
    );
  });

  test('bad flags', async () => {
    const r = await runCommand(run, ['--bogus']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^impersync explain: Unknown option '--bogus'/);
    assert.match(await unusable(['-f', 'x', '-o', 'yaml']), /-o\/--output must be 'text' or 'json', not 'yaml'/);
  });

  test('--help exits 0 with the usage', async () => {
    const r = await runCommand(run, ['--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^usage: impersync explain -f FILE/);
  });
});

test('as a process: `impersync explain` exits 0 with the JSON on stdout, and 2 on bad input', () => {
  const node = process.execPath;
  const main = repoFile('src/cli/main.ts');
  const ok = spawnSync(node, [main, 'explain', '-f', repoFile('examples/argocd-cm.yaml'), '-f', '-', '-o', 'json'], {
    input: readFileSync(repoFile('examples/02-specific-namespace.yaml'), 'utf8'),
    encoding: 'utf8',
  });
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(JSON.parse(ok.stdout).serviceAccount, 'system:serviceaccount:guestbook:guestbook-deployer');
  const bad = spawnSync(node, [main, 'explain', '-f', '/nonexistent.yaml'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr, 'impersync explain: /nonexistent.yaml: cannot read: no such file\n');
});

describe('explain: sync windows', () => {
  // An always-active deny window (pkg/apis/application/v1alpha1/types.go SyncWindows.CanSync).
  const windowed = () =>
    files({
      'project.yaml':
        projectYaml('my-project', ENTRIES) +
        "  syncWindows: [{kind: deny, schedule: '* * * * *', duration: 1h, applications: ['*']}]\n",
    });

  test('the windows that apply and those active now are shown, in text and JSON', async () => {
    const f = windowed();
    const argv = ['-f', f['cm.yaml']!, '-f', f['app.yaml']!, '-f', f['project.yaml']!];
    const text = await runCommand(run, argv);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /^Sync windows: {2}1 assigned, active now: deny '\* \* \* \* \*' for 1h; a manual sync may not run now$/m,
    );
    const out = await json(argv);
    const window = { kind: 'deny', schedule: '* * * * *', duration: '1h', applications: ['*'] };
    assert.deepEqual(out['syncWindows'], { assignedWindows: [window], activeWindows: [window], canSync: false });
  });
});
