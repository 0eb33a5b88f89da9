// Sync windows, table by table, as Argo CD's SyncWindows rules read
// (pkg/apis/application/v1alpha1/types.go: Matches, Active, CanSync; controller/sync.go's message).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Application, SyncWindow } from '../../src/api/index.ts';
import {
  activeWindows,
  blockedMessage,
  canSync,
  matchingWindows,
  nextWindowChange,
  parseGoDuration,
} from '../../src/project/windows.ts';

const app = (name: string, dest: Record<string, string>): Application =>
  ({ metadata: { name, namespace: 'argocd' }, spec: { destination: dest } }) as Application;
const at = (iso: string) => new Date(iso);

// 10:00-11:00 UTC every day.
const allow10: SyncWindow = { kind: 'allow', schedule: '0 10 * * *', duration: '1h', applications: ['*'] };
const deny10: SyncWindow = { kind: 'deny', schedule: '0 10 * * *', duration: '1h', applications: ['*'] };

test('a window is active from its schedule for its duration, not at the very end', () => {
  for (const [now, active] of [
    ['2026-03-02T09:59:00Z', false],
    ['2026-03-02T10:00:30Z', true],
    ['2026-03-02T10:59:59Z', true],
    ['2026-03-02T11:00:00Z', false],
  ] as const) {
    const got = activeWindows([allow10], at(now));
    assert.ok(!(got instanceof Error));
    assert.equal(got.length === 1, active, now);
  }
});

test('timeZone shifts the clock by the zone offset (Asia/Tokyo is UTC+9, no DST)', () => {
  const tokyo: SyncWindow = { ...allow10, timeZone: 'Asia/Tokyo' };
  // 10:30 in Tokyo is 01:30 UTC.
  assert.equal((activeWindows([tokyo], at('2026-03-02T01:30:00Z')) as SyncWindow[]).length, 1);
  assert.equal((activeWindows([tokyo], at('2026-03-02T10:30:00Z')) as SyncWindow[]).length, 0);
  // An unknown zone is UTC (Argo CD logs "Invalid time zone ... Using UTC").
  assert.equal(
    (activeWindows([{ ...allow10, timeZone: 'Nowhere/Land' }], at('2026-03-02T10:30:00Z')) as SyncWindow[]).length,
    1,
  );
});

test('CanSync: deny wins; manualSync lets manual syncs through; inactive allows hold; none: free', () => {
  const inside = at('2026-03-02T10:30:00Z');
  const outside = at('2026-03-02T12:00:00Z');
  const rows: Array<[string, SyncWindow[], boolean, Date, boolean]> = [
    ['no windows', [], false, inside, true],
    ['active deny, automated', [deny10], false, inside, false],
    ['active deny, manual, no manualSync', [deny10], true, inside, false],
    ['active deny, manual, manualSync', [{ ...deny10, manualSync: true }], true, inside, true],
    ['inactive deny', [deny10], false, outside, true],
    ['active allow', [allow10], false, inside, true],
    ['inactive allow, automated', [allow10], false, outside, false],
    ['inactive allow, manual with manualSync', [{ ...allow10, manualSync: true }], true, outside, true],
    ['active allow and active deny: deny wins', [allow10, deny10], false, inside, false],
  ];
  for (const [what, windows, manual, now, want] of rows)
    assert.equal(canSync(windows, manual, undefined, now).canSync, want, what);
});

test('syncOverrun: an operation begun while allowed goes on into a deny window, and past an allow window', () => {
  const before = at('2026-03-02T09:50:00Z');
  const inside = at('2026-03-02T10:30:00Z');
  assert.equal(canSync([{ ...deny10, syncOverrun: true }], false, before, inside).canSync, true);
  assert.equal(canSync([deny10], false, before, inside).canSync, false);
  const during = at('2026-03-02T10:30:00Z');
  const after = at('2026-03-02T11:30:00Z');
  assert.equal(canSync([{ ...allow10, syncOverrun: true }], false, during, after).canSync, true);
  assert.equal(canSync([allow10], false, during, after).canSync, false);
});

test('an invalid window blocks with the cron or duration error, in Argo CD words', () => {
  const bad = canSync([{ ...allow10, schedule: '0 10 * * * *' }], false, undefined, at('2026-03-02T10:30:00Z'));
  assert.deepEqual(bad, {
    canSync: false,
    error:
      "invalid sync windows: cannot parse schedule '0 10 * * * *': expected exactly 5 fields, found 6: [0 10 * * * *]",
  });
  assert.equal(
    blockedMessage(bad),
    "Sync operation blocked by sync window: invalid sync windows: cannot parse schedule '0 10 * * * *': expected exactly 5 fields, found 6: [0 10 * * * *]",
  );
  assert.equal(blockedMessage({ canSync: false }), 'Sync operation blocked by sync window');
  // Schedules are parsed once and remembered: asked again, the same error.
  assert.deepEqual(
    canSync([{ ...allow10, schedule: '0 10 * * * *' }], true, undefined, at('2026-03-03T10:30:00Z')),
    bad,
  );
  const dur = canSync([{ ...allow10, duration: '1' }], false, undefined, at('2026-03-02T10:30:00Z'));
  assert.equal(
    !dur.canSync && dur.error,
    `invalid sync windows: cannot parse duration '1': time: missing unit in duration "1"`,
  );
});

test('Matches: applications, clusters and namespaces OR-ed, AND-ed with andOperator', () => {
  const a = app('guestbook', { server: 'https://kubernetes.default.svc', namespace: 'prod' });
  const rows: Array<[string, SyncWindow, boolean]> = [
    ['application glob', { applications: ['guest*'] }, true],
    ['application miss', { applications: ['other'] }, false],
    ['cluster by server', { clusters: ['https://kubernetes.default.svc'] }, true],
    ['namespace', { namespaces: ['prod'] }, true],
    ['OR: app miss, namespace hit', { applications: ['other'], namespaces: ['prod'] }, true],
    ['AND: app hit, namespace miss', { applications: ['guestbook'], namespaces: ['dev'], andOperator: true }, false],
    ['AND: all hit', { applications: ['guestbook'], namespaces: ['prod'], andOperator: true }, true],
    ['nothing named', {}, false],
  ];
  for (const [what, w, want] of rows)
    assert.equal(matchingWindows([{ kind: 'allow', ...w }], a).length === 1, want, what);
});

test('the next change is the window opening, or its end while active', () => {
  assert.equal(nextWindowChange([allow10], at('2026-03-02T08:00:00Z'))?.toISOString(), '2026-03-02T10:00:00.000Z');
  assert.equal(nextWindowChange([allow10], at('2026-03-02T10:30:00Z'))?.toISOString(), '2026-03-02T11:00:00.000Z');
});

test("Go's time.ParseDuration", () => {
  assert.equal(parseGoDuration('1h30m'), 5_400_000);
  assert.equal(parseGoDuration('0'), 0);
  assert.ok(parseGoDuration('10') instanceof Error);
  assert.ok(parseGoDuration('1d') instanceof Error);
});
