import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { diffLines, toYaml, unifiedDiff } from '../../src/sync/differ.ts';

test('equal texts have no diff', () => {
  assert.equal(unifiedDiff('a\nb\n', 'a\nb\n'), '');
});

test('a changed line shows as removed and added with context and a hunk header', () => {
  const old = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].join('\n');
  const neu = ['a', 'b', 'c', 'd', 'E', 'f', 'g', 'h'].join('\n');
  assert.equal(unifiedDiff(old, neu), '@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n');
});

test('distant changes get separate hunks', () => {
  const lines = Array.from({ length: 30 }, (_, i) => `l${i}`);
  const changed = [...lines];
  changed[2] = 'X';
  changed[25] = 'Y';
  const out = unifiedDiff(lines.join('\n'), changed.join('\n'));
  assert.equal(out.split('\n').filter((l) => l.startsWith('@@')).length, 2);
  assert.match(out, /^@@ -1,6 \+1,6 @@/);
});

test('a new object is all additions; a pruned one all removals', () => {
  assert.equal(unifiedDiff('', 'a: 1\nb: 2\n'), '@@ -0,0 +1,2 @@\n+a: 1\n+b: 2\n');
  assert.equal(unifiedDiff('a: 1\n', ''), '@@ -1,1 +0,0 @@\n-a: 1\n');
});

test('the edit script rebuilds both sides (property)', () => {
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom('a', 'b', 'c', 'd')),
      fc.array(fc.constantFrom('a', 'b', 'c', 'd')),
      (a, b) => {
        const ops = diffLines(a, b) ?? [];
        assert.deepEqual(
          ops.filter((o) => o.op !== '+').map((o) => o.line),
          a,
        );
        assert.deepEqual(
          ops.filter((o) => o.op !== '-').map((o) => o.line),
          b,
        );
      },
    ),
  );
});

test('the edit script is minimal: no longer than the LCS bound (property)', () => {
  const lcs = (a: string[], b: string[]) => {
    const dp = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
    for (let i = 1; i <= a.length; i++)
      for (let j = 1; j <= b.length; j++)
        dp[i]![j] = a[i - 1] === b[j - 1] ? dp[i - 1]![j - 1]! + 1 : Math.max(dp[i - 1]![j]!, dp[i]![j - 1]!);
    return dp[a.length]![b.length]!;
  };
  fc.assert(
    fc.property(fc.array(fc.constantFrom('a', 'b', 'c')), fc.array(fc.constantFrom('a', 'b', 'c')), (a, b) => {
      const edits = (diffLines(a, b) ?? []).filter((o) => o.op !== ' ').length;
      assert.equal(edits, a.length + b.length - 2 * lcs(a, b));
    }),
  );
});

test('past the limit of changed lines there is no edit script, and only then (property)', () => {
  const lcs = (a: string[], b: string[]) => {
    const dp = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
    for (let i = 1; i <= a.length; i++)
      for (let j = 1; j <= b.length; j++)
        dp[i]![j] = a[i - 1] === b[j - 1] ? dp[i - 1]![j - 1]! + 1 : Math.max(dp[i - 1]![j]!, dp[i]![j - 1]!);
    return dp[a.length]![b.length]!;
  };
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 30 }),
      fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 30 }),
      fc.nat(20),
      (a, b, max) => {
        const needed = a.length + b.length - 2 * lcs(a, b);
        const ops = diffLines(a, b, max);
        if (needed <= max) assert.ok(ops, `${needed} changes fit in ${max}`);
        else assert.equal(ops, undefined, `${needed} changes do not fit in ${max}`);
      },
    ),
  );
});

test('a ConfigMap of 12,000 keys whose values all change: the diff says how many lines differ', () => {
  const cm = (v: string) => {
    const data: Record<string, string> = {};
    for (let i = 0; i < 12_000; i++) data[`key-${i}`] = `${v}-${i}`;
    return toYaml({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'wide' }, data });
  };
  assert.equal(
    unifiedDiff(cm('old'), cm('new')),
    '# diff not shown: 12000 lines removed and 12000 added, more than the 2000 changed lines a diff shows\n',
  );
  // Within the limit it is the diff.
  assert.match(
    unifiedDiff(cm('old'), cm('old').replace('key-7: old-7\n', 'key-7: new-7\n'), { maxChanges: 2 }),
    /^-.*old-7$/m,
  );
});

test('YAML output does not fold long lines', () => {
  const long = 'x'.repeat(200);
  assert.equal(toYaml({ a: long }), `a: ${long}\n`);
});
