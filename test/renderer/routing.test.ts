// Routing renderer requests by repository: the ranking is the same wherever it is computed, adding
// or removing a replica moves only the repositories whose first choice changes (about 1/N), and
// the routing key never splits what the renderer's caches share.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rankReplicas, routingKey } from '../../src/renderer/routing.ts';
import { repoLocation } from '../../src/source/repo-url.ts';

const repos = Array.from({ length: 1000 }, (_, i) => `https://git.example.com/team-${i % 37}/repo-${i}.git`);
const replicas = (n: number) => Array.from({ length: n }, (_, i) => `http://10.0.0.${i + 1}:8081`);
const first = (list: string[], repo: string) => rankReplicas(list, routingKey(repo))[0] as string;

test('a ranking is every replica once, the same whatever order or repetition the addresses come in', () => {
  const list = replicas(5);
  for (const repo of repos.slice(0, 50)) {
    const ranked = rankReplicas(list, repo);
    assert.deepEqual([...ranked].sort(), [...list].sort());
    assert.deepEqual(rankReplicas([...list].reverse(), repo), ranked);
    assert.deepEqual(rankReplicas([...list, ...list], repo), ranked);
  }
  // Not one order for everything: the first choices differ between repositories.
  assert.ok(new Set(repos.slice(0, 50).map((r) => first(list, r))).size > 1);
});

test('the repositories spread evenly: each of 4 replicas is the first choice of about a quarter', () => {
  const counts = new Map<string, number>();
  for (const repo of repos) counts.set(first(replicas(4), repo), (counts.get(first(replicas(4), repo)) ?? 0) + 1);
  console.log('first choices of 1000 repositories over 4 replicas:', [...counts.values()].join(' '));
  assert.equal(counts.size, 4);
  for (const [replica, n] of counts) assert.ok(n > 180 && n < 320, `${replica}: ${n} of 1000`);
});

for (const n of [2, 3, 4, 8]) {
  test(`adding a replica to ${n} moves about 1/${n + 1} of 1000 repositories, all of them to the new one; removing it moves them back`, () => {
    const before = replicas(n);
    const after = replicas(n + 1);
    const added = after[n] as string;
    let moved = 0;
    for (const repo of repos) {
      const was = first(before, repo);
      const now = first(after, repo);
      if (was !== now) {
        moved++;
        assert.equal(now, added, `${repo} moved from ${was} to ${now}, not to the new replica`);
      }
      // Removing the replica again restores the old choice exactly.
      assert.equal(first(before, repo), was);
    }
    const fraction = moved / repos.length;
    console.log(
      `${n} -> ${n + 1} replicas: ${moved} of 1000 repositories moved (${fraction.toFixed(3)}; 1/${n + 1} = ${(1 / (n + 1)).toFixed(3)})`,
    );
    assert.ok(Math.abs(fraction - 1 / (n + 1)) < 0.06, `moved ${fraction}, expected about ${1 / (n + 1)}`);
  });
}

test('removing one of 4 replicas moves only its own repositories, each to its second choice', () => {
  const list = replicas(4);
  const gone = list[1] as string;
  const rest = list.filter((r) => r !== gone);
  let moved = 0;
  for (const repo of repos) {
    const ranked = rankReplicas(list, routingKey(repo));
    const now = first(rest, repo);
    if (ranked[0] === gone) {
      moved++;
      assert.equal(now, ranked[1], 'to the next in its ranking, where failover sent it too');
    } else assert.equal(now, ranked[0], `${repo} stays where it was`);
  }
  console.log(`4 -> 3 replicas: ${moved} of 1000 repositories moved (${(moved / 1000).toFixed(3)})`);
  assert.ok(Math.abs(moved / 1000 - 1 / 4) < 0.06, `moved ${moved}`);
});

test("the routing key never splits what the renderer's clone cache keeps together", () => {
  const urls = [
    'https://github.com/org/repo.git',
    ' https://github.com/org/repo.git ',
    'https://github.com/org/repo.git\n',
    'https://github.com/org/repo',
    'https://github.com/Org/repo.git',
    'git@github.com:org/repo.git',
    '  git@github.com:org/repo.git',
    'ssh://git@github.com/org/repo.git',
  ];
  for (const a of urls)
    for (const b of urls) {
      if (repoLocation(a, false).key === repoLocation(b, false).key)
        assert.equal(routingKey(a), routingKey(b), `'${a}' and '${b}' share a clone, so a replica`);
    }
  // OCI and Helm repositories are routed by their URL as well.
  assert.equal(routingKey(' oci://registry.example.com/charts '), 'oci://registry.example.com/charts');
});
