// Argo CD's TestSelfHealRemainingBackoff
// (controller/appcontroller_test.go), for selfHealRemainingMs: the same table, the same answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffDelayMs, goDuration, selfHealRemainingMs } from '../../src/controller/self-heal.ts';
import type { SelfHealPolicy } from '../../src/controller/self-heal.ts';

const NOW = Date.parse('2026-01-01T00:00:00Z');

test("self-heal backoff: Argo CD's table (Factor 3, Duration 2s, Cap 2m)", () => {
  const policy: SelfHealPolicy = { timeoutMs: 0, backoff: { durationMs: 2000, factor: 3, capMs: 120_000 } };
  const cases: Array<{ attempts: number; finishedAt: number | undefined; expected: number; shouldSelfHeal: boolean }> =
    [
      { attempts: 0, finishedAt: NOW, expected: 0, shouldSelfHeal: true },
      { attempts: 1, finishedAt: NOW, expected: 2000, shouldSelfHeal: false },
      { attempts: 2, finishedAt: NOW, expected: 6000, shouldSelfHeal: false },
      { attempts: 3, finishedAt: undefined, expected: 18_000, shouldSelfHeal: false },
      { attempts: 4, finishedAt: undefined, expected: 54_000, shouldSelfHeal: false },
      { attempts: 5, finishedAt: undefined, expected: 120_000, shouldSelfHeal: false },
      { attempts: 6, finishedAt: undefined, expected: 120_000, shouldSelfHeal: false },
      { attempts: 6, finishedAt: NOW, expected: 120_000, shouldSelfHeal: false },
      { attempts: 40, finishedAt: NOW - 180_000, expected: -60_000, shouldSelfHeal: true },
    ];
  for (const c of cases) {
    const remaining = selfHealRemainingMs(policy, c.attempts, c.finishedAt, NOW);
    assert.equal(remaining, c.expected, `attempts ${c.attempts}`);
    assert.equal(remaining <= 0, c.shouldSelfHeal, `attempts ${c.attempts}: should self-heal`);
  }
});

test("the defaults' steps: 0, 2 s, 6 s, 18 s, 54 s, 162 s, then the 300 s cap", () => {
  const backoff = { durationMs: 2000, factor: 3, capMs: 300_000 };
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5, 6, 7, 20].map((n) => backoffDelayMs(backoff, n) / 1000),
    [0, 2, 6, 18, 54, 162, 300, 300, 300],
  );
  // A factor of 0 never grows (wait.Backoff leaves Duration alone); a cap of 0 is no cap.
  assert.equal(backoffDelayMs({ durationMs: 2000, factor: 0, capMs: 1000 }, 5), 2000);
  assert.equal(backoffDelayMs({ durationMs: 1000, factor: 10, capMs: 0 }, 4), 1_000_000);
});

test('without a backoff: the fixed timeout since the last sync finished', () => {
  const policy: SelfHealPolicy = { timeoutMs: 5000 };
  assert.equal(selfHealRemainingMs(policy, 3, NOW - 2000, NOW), 3000);
  assert.equal(selfHealRemainingMs(policy, 0, undefined, NOW), 5000);
  assert.equal(selfHealRemainingMs({ timeoutMs: 0 }, 9, NOW, NOW), 0);
});

test("durations print as Go's time.Duration does, for Argo CD's messages", () => {
  assert.deepEqual([0, 500, 1000, 1500, 90_000, 3_600_000, 3_725_000].map(goDuration), [
    '0s',
    '500ms',
    '1s',
    '1.5s',
    '1m30s',
    '1h0m0s',
    '1h2m5s',
  ]);
});
