// The design document's examples (examples/) explained: each file's comment states the outcome, and
// this test holds impersync to it.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { run } from '../../src/cli/explain.ts';
import { repoFile, runCommand, writeFiles } from './helpers.ts';

const CM = repoFile('examples/argocd-cm.yaml');

async function explainJson(file: string, app?: string) {
  const argv = ['-f', CM, '-f', repoFile(`examples/${file}`), '-o', 'json', ...(app ? ['--app', app] : [])];
  const r = await runCommand(run, argv);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  return JSON.parse(r.stdout) as {
    decision: string;
    serviceAccount: string | null;
    message: string;
    matched: { index: number } | null;
    resolvedServer: string;
    warnings: string[];
  };
}

const cases: {
  file: string;
  app?: string;
  decision: string;
  serviceAccount: string | null;
  resolvedServer?: string;
}[] = [
  {
    file: '01-all-namespaces.yaml',
    decision: 'impersonate',
    serviceAccount: 'system:serviceaccount:guestbook:generic-deployer',
  },
  {
    file: '02-specific-namespace.yaml',
    decision: 'impersonate',
    serviceAccount: 'system:serviceaccount:guestbook:guestbook-deployer',
  },
  {
    file: '03-remote-cluster-argocd-manager.yaml',
    decision: 'impersonate',
    serviceAccount: 'system:serviceaccount:guestbook:guestbook-deployer',
    resolvedServer: 'https://remote.example:6443',
  },
  {
    file: '04-remote-cluster-custom-sa.yaml',
    decision: 'impersonate',
    serviceAccount: 'system:serviceaccount:guestbook:guestbook-deployer',
    resolvedServer: 'https://remote.example:6443',
  },
  {
    file: '05-service-account-in-another-namespace.yaml',
    decision: 'impersonate',
    serviceAccount: 'system:serviceaccount:mynamespace:guestbook-deployer',
  },
  {
    file: '06-several-matching-entries.yaml',
    app: 'argocd/guestbook-myns',
    decision: 'impersonate',
    serviceAccount: 'system:serviceaccount:myns:generic-deployer',
  },
  {
    file: '06-several-matching-entries.yaml',
    app: 'argocd/guestbook-dev',
    decision: 'impersonate',
    serviceAccount: 'system:serviceaccount:guestbook-dev:guestbook-generic-deployer',
  },
  {
    file: '06-several-matching-entries.yaml',
    app: 'argocd/guestbook-prod',
    decision: 'impersonate',
    serviceAccount: 'system:serviceaccount:guestbook-prod:guestbook-prod-deployer',
  },
  {
    file: '08-no-destination-namespace-matching.yaml',
    app: 'argocd/guestbook',
    decision: 'impersonate',
    serviceAccount: 'system:serviceaccount:argocd:guestbook-deployer',
  },
  {
    file: '08-no-destination-namespace-matching.yaml',
    app: 'argocd/guestbook-explicit',
    decision: 'impersonate',
    serviceAccount: 'system:serviceaccount:guestbook:guestbook-deployer',
  },
];

describe("examples/: the design document's cases give their documented outcome", () => {
  for (const c of cases) {
    test(`${c.file}${c.app ? ` --app ${c.app}` : ''} → ${c.decision} ${c.serviceAccount ?? ''}`, async () => {
      const r = await explainJson(c.file, c.app);
      assert.equal(r.decision, c.decision);
      assert.equal(r.serviceAccount, c.serviceAccount);
      assert.equal(r.resolvedServer, c.resolvedServer ?? 'https://kubernetes.default.svc');
      assert.deepEqual(r.warnings, []);
      // The file's comment states the same outcome.
      const text = readFileSync(repoFile(`examples/${c.file}`), 'utf8');
      assert.ok(
        text.includes(c.serviceAccount ?? 'deny: no matching service account found'),
        `the comment of ${c.file} states the outcome`,
      );
    });
  }

  test("07: refused as the controller refuses it, before any ServiceAccount is looked for: the project's destinations do not allow the empty namespace (spec §9)", async () => {
    const r = await runCommand(run, ['-f', CM, '-f', repoFile('examples/07-no-destination-namespace.yaml')]);
    assert.equal(r.code, 3, r.stderr);
    assert.ok(
      readFileSync(repoFile('examples/07-no-destination-namespace.yaml'), 'utf8').includes('-> exit 3, REFUSED'),
    );
    assert.match(
      r.stdout,
      /REFUSED: [^\n]*\(InvalidSpecError\)\n {2}message: application destination server 'https:\/\/kubernetes\.default\.svc' and namespace '' do not match any of the allowed destinations in project 'my-project'/,
    );
    assert.ok(readFileSync(repoFile('examples/07-no-destination-namespace.yaml'), 'utf8').includes("and namespace ''"));
  });

  test("07: with destinations that allow it, the deny message is spec §5's, with the raw (empty) destination namespace", async () => {
    const text = readFileSync(repoFile('examples/07-no-destination-namespace.yaml'), 'utf8').replace(
      / {2}destinations:\n( {4}.*\n)+/,
      "  destinations: [{server: '*', namespace: '*'}]\n",
    );
    const [file] = Object.values(writeFiles({ '07-widened.yaml': text }));
    const r = await runCommand(run, ['-f', CM, '-f', file!, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { decision: string; message: string };
    assert.equal(out.decision, 'deny');
    assert.equal(
      out.message,
      'no matching service account found for destination server https://kubernetes.default.svc and namespace ',
    );
    assert.ok(text.includes(`-> deny: ${out.message}`), 'the comment of 07 states the decision');
  });

  test('06: the first match wins: guestbook-prod is decided by entry 0, guestbook-dev by entry 1, myns by entry 2', async () => {
    assert.equal((await explainJson('06-several-matching-entries.yaml', 'argocd/guestbook-prod')).matched?.index, 0);
    assert.equal((await explainJson('06-several-matching-entries.yaml', 'argocd/guestbook-dev')).matched?.index, 1);
    assert.equal((await explainJson('06-several-matching-entries.yaml', 'argocd/guestbook-myns')).matched?.index, 2);
  });

  test("remote examples quote '*' and target a genuinely remote cluster through a cluster Secret", () => {
    for (const f of ['03-remote-cluster-argocd-manager.yaml', '04-remote-cluster-custom-sa.yaml']) {
      const text = readFileSync(repoFile(`examples/${f}`), 'utf8');
      assert.match(text, /argocd\.argoproj\.io\/secret-type: cluster/);
      assert.match(text, /Deviation from the design document/);
    }
  });
});
