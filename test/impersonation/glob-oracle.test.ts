// spec §2 against the real thing: fixtures/gobwas.json holds the answers of gobwas/glob v0.2.3 (the
// version Argo CD pins), produced by gobwas-oracle/ for hand-picked and seeded random patterns.
// Compile errors must agree exactly. Matches must agree except in three places where gobwas's
// optimising compiler has bugs that contradict spec §2 (which impersync follows):
//   A. a single-character matcher (`?`, `[!...]`) alone accepts the empty string;
//   B. a group with an empty alternative (`{}`, `{a,}`, `x{`) is matched wrongly next to `*`;
//   C. a prefix and a suffix around `*` may overlap (`a*a` matches "a"), so a text shorter than the
//      pattern's fixed characters is accepted.
// Each disagreement must fall in one of them, and impersync's answer must then be the spec's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { compileGlob } from '../../src/impersonation/glob.ts';
import { parseGlob, type GlobNode } from '../../src/impersonation/glob-syntax.ts';

interface Answer {
  pattern: string;
  texts: string[];
  error?: string;
  matches?: boolean[];
  panics?: string[];
}

const answers = JSON.parse(readFileSync(new URL('./fixtures/gobwas.json', import.meta.url), 'utf8')) as Answer[];

function hasEmptyAlternative(nodes: readonly GlobNode[]): boolean {
  return nodes.some(
    (n) => n.kind === 'alternatives' && n.options.some((o) => o.length === 0 || hasEmptyAlternative(o)),
  );
}

/** Fewest characters any text matching the pattern must have, by spec §2. */
function minLength(nodes: readonly GlobNode[]): number {
  let n = 0;
  for (const node of nodes) {
    if (node.kind === 'text') n += Array.from(node.text).length;
    else if (node.kind === 'single' || node.kind === 'list' || node.kind === 'range') n += 1;
    else if (node.kind === 'alternatives') n += Math.min(...node.options.map(minLength));
  }
  return n;
}

function knownGobwasBug(pattern: string, text: string, gobwas: boolean): string | null {
  const parsed = parseGlob(pattern);
  if (!parsed.ok) return null;
  if (gobwas && text === '') return 'A';
  if (hasEmptyAlternative(parsed.nodes)) return 'B';
  if (gobwas && pattern.includes('*') && Array.from(text).length < minLength(parsed.nodes)) return 'C';
  return null;
}

test('the fixture is substantial (hand-picked and random patterns)', () => {
  assert.ok(answers.length >= 600, `${answers.length} patterns`);
  assert.ok(answers.filter((a) => a.error !== undefined).length >= 50, 'many compile errors');
});

test('spec §2 compile errors agree with gobwas/glob exactly', () => {
  const wrong: string[] = [];
  for (const a of answers) {
    const ours = compileGlob(a.pattern);
    const theirs = a.error ?? null;
    const mine = ours.ok ? null : ours.error;
    if (mine !== theirs)
      wrong.push(`${JSON.stringify(a.pattern)}: gobwas ${JSON.stringify(theirs)}, impersync ${JSON.stringify(mine)}`);
  }
  assert.deepEqual(wrong, []);
});

test('matches agree with gobwas/glob, except its three documented bugs', () => {
  const wrong: string[] = [];
  const bugs: Record<string, number> = { A: 0, B: 0, C: 0 };
  let compared = 0;
  for (const a of answers) {
    if (a.matches === undefined) continue;
    const compiled = compileGlob(a.pattern);
    assert.ok(compiled.ok, a.pattern);
    a.texts.forEach((text, i) => {
      if (a.panics?.includes(text)) return; // gobwas crashed on this one: nothing to compare
      compared++;
      const theirs = a.matches?.[i] as boolean;
      const mine = compiled.glob.match(text);
      if (mine === theirs) return;
      const bug = knownGobwasBug(a.pattern, text, theirs);
      if (bug) bugs[bug] = (bugs[bug] ?? 0) + 1;
      else wrong.push(`${JSON.stringify(a.pattern)} vs ${JSON.stringify(text)}: gobwas ${theirs}, impersync ${mine}`);
    });
  }
  assert.deepEqual(wrong, []);
  assert.ok(compared > 5000, `${compared} comparisons`);
});

test('realistic server and namespace globs agree with gobwas/glob on every text', () => {
  const realistic = [
    'https://kubernetes.default.svc',
    'https://*',
    '*.svc',
    'https://*.example.com:6443',
    'guestbook-*',
    'guestbook-{dev,stage}',
    'team-[a-c]-*',
    '*-prod',
    'kube-*',
    '[!k]*',
    'ns-[0-9][0-9]',
    '*',
  ];
  for (const pattern of realistic) {
    const a = answers.find((x) => x.pattern === pattern);
    assert.ok(a?.matches, pattern);
    const compiled = compileGlob(pattern);
    assert.ok(compiled.ok);
    assert.deepEqual(
      a.texts.map((t) => compiled.glob.match(t)),
      a.matches,
      pattern,
    );
  }
});
