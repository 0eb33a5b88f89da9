// spec §2: the glob dialect (gobwas/glob with no separators).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compileGlob, globCacheSize, globMatch, matchGlob } from '../../src/impersonation/glob.ts';

const matches = (pattern: string, text: string) => {
  const r = matchGlob(pattern, text);
  assert.ok(r.ok, `pattern ${JSON.stringify(pattern)} should compile, got ${r.ok ? '' : r.error}`);
  return r.matched;
};
const compileError = (pattern: string) => {
  const r = compileGlob(pattern);
  assert.ok(!r.ok, `pattern ${JSON.stringify(pattern)} should not compile`);
  return r.error;
};

describe('spec §2: glob dialect', () => {
  test('"`*` (and `**`) matches any sequence, including "", `/`, `.`, `:`"', () => {
    for (const p of ['*', '**']) {
      for (const t of ['', '/', '.', ':', 'https://kubernetes.default.svc', 'a/b.c:d'])
        assert.equal(matches(p, t), true, `${p} vs ${t}`);
    }
    assert.equal(matches('https://*', 'https://kubernetes.default.svc'), true);
    assert.equal(matches('*.svc', 'https://kubernetes.default.svc'), true);
    assert.equal(matches('https://*:6443', 'https://a.b/c:6443'), true);
  });

  test('"`?` matches any one character"', () => {
    assert.equal(matches('?', 'a'), true);
    assert.equal(matches('?', '/'), true);
    assert.equal(matches('?', 'é'), true, 'one character, not one byte');
    assert.equal(matches('?', '😀'), true, 'one code point, not one UTF-16 unit');
    assert.equal(matches('?', 'ab'), false);
    assert.equal(matches('a?c', 'abc'), true);
    assert.equal(matches('a?c', 'ac'), false);
  });

  test('"`[abc]`, `[a-z]`, `[!a-z]` character classes"', () => {
    assert.equal(matches('[abc]', 'b'), true);
    assert.equal(matches('[abc]', 'd'), false);
    assert.equal(matches('[a-z]', 'q'), true);
    assert.equal(matches('[a-z]', 'Q'), false);
    assert.equal(matches('[!a-z]', 'Q'), true);
    assert.equal(matches('[!a-z]', 'q'), false);
    assert.equal(matches('[!abc]', 'd'), true);
    assert.equal(matches('ns-[0-9][0-9]', 'ns-42'), true);
  });

  test('"`{a,b,c}` alternatives"', () => {
    assert.equal(matches('{a,b,c}', 'b'), true);
    assert.equal(matches('{a,b,c}', 'd'), false);
    assert.equal(matches('guestbook-{dev,stage}', 'guestbook-stage'), true);
    assert.equal(matches('guestbook-{dev,stage}', 'guestbook-prod'), false);
    assert.equal(matches('{a,{b,c}}x', 'cx'), true);
    assert.equal(matches('{a*,b}', 'abc'), true);
  });

  test('"`\\x` escapes `x`"', () => {
    assert.equal(matches('\\*', '*'), true);
    assert.equal(matches('\\*', 'a'), false);
    assert.equal(matches('\\?', '?'), true);
    assert.equal(matches('\\[a]', '[a]'), true);
    assert.equal(matches('{a\\,b}', 'a,b'), true);
    assert.equal(matches('\\\\', '\\'), true);
  });

  test('"Anchored to the whole string, case-sensitive"', () => {
    assert.equal(matches('guestbook', 'guestbook-dev'), false);
    assert.equal(matches('guestbook', 'my-guestbook'), false);
    assert.equal(matches('Guestbook', 'guestbook'), false);
    assert.equal(matches('guestbook-*', 'guestbook-dev'), true);
    assert.equal(matches('a*a', 'a'), false, 'a prefix and a suffix may not overlap');
  });

  test('"The empty pattern matches only """', () => {
    assert.equal(matches('', ''), true);
    assert.equal(matches('', 'a'), false);
    assert.equal(matches('', ' '), false);
  });

  test('"`!` is special only as the first character inside `[...]`; elsewhere it is a literal"', () => {
    assert.equal(matches('!a', '!a'), true);
    assert.equal(matches('!a', 'b'), false, 'a leading ! is not a negation');
    assert.equal(matches('a!b', 'a!b'), true);
    assert.equal(matches('[a!]', '!'), true, 'not first inside the class: literal');
    assert.equal(matches('[!!]', '!'), false, 'first: negation, then a literal !');
    assert.equal(matches('[!!]', 'a'), true);
  });

  test('"An unclosed `{` is not an error": the group runs to the end of the pattern', () => {
    assert.equal(compileGlob('{a,b').ok, true);
    assert.equal(matches('{a,b', 'a'), true);
    assert.equal(matches('{a,b', 'b'), true);
    assert.equal(matches('{a,b', '{a,b'), false);
    assert.equal(matches('x{a,b', 'xb'), true);
    assert.equal(matches('{', ''), true);
  });

  test('"a `}` or `]` outside a group is a literal"', () => {
    assert.equal(matches('}', '}'), true);
    assert.equal(matches(']', ']'), true);
    assert.equal(matches('a]b', 'a]b'), true);
    assert.equal(matches('a}b', 'a}b'), true);
    assert.equal(matches('a,b', 'a,b'), true, 'a comma outside a group is a literal too');
  });

  test('"a trailing lone `\\` is dropped"', () => {
    assert.equal(matches('a\\', 'a'), true);
    assert.equal(matches('a\\', 'a\\'), false);
    assert.equal(matches('\\', ''), true);
  });

  test('"unterminated `[` → `unexpected end of input`"', () => {
    for (const p of ['[', '[a', '[a-z', '[!', '[a-]', 'x[a-z]['])
      assert.equal(compileError(p), 'unexpected end of input', p);
  });

  test('"`[a-bc]` → `expected close range character`"', () => {
    assert.equal(compileError('[a-bc]'), 'expected close range character');
    assert.equal(compileError('[a-zA-Z]'), 'expected close range character');
  });

  test("\"`[z-a]` → `hi character 'a' should be greater than lo 'z'`\"", () => {
    assert.equal(compileError('[z-a]'), "hi character 'a' should be greater than lo 'z'");
    assert.equal(compileError('{[z-a],b}'), "hi character 'a' should be greater than lo 'z'");
  });

  test('"`[]` or `[!]` → `could not parse range`"', () => {
    assert.equal(compileError('[]'), 'could not parse range');
    assert.equal(compileError('[!]'), 'could not parse range');
  });

  test('"Compile errors come only from classes": everything else compiles', () => {
    for (const p of ['', '*', '{', '{{{', '}}}', ']]', '!', '\\', ',,', '{a,,b}', '***?', 'https://*', '{a,b}}']) {
      assert.equal(compileGlob(p).ok, true, p);
    }
  });

  test('the first error in the pattern is the one reported', () => {
    assert.equal(compileError('[z-a]['), "hi character 'a' should be greater than lo 'z'");
    assert.equal(compileError('[a-z]['), 'unexpected end of input');
  });

  test('U+FFFD fails with `could not read rune`, as Go reads it (beyond the spec text)', () => {
    assert.equal(compileError('a\ufffdb'), 'could not read rune');
  });

  test('path-oriented matchers get `server: "*"` wrong; this one does not', () => {
    assert.equal(globMatch('*', 'https://kubernetes.default.svc'), true);
    assert.equal(globMatch('!*', 'https://kubernetes.default.svc'), false, 'leading ! is a literal, not a negation');
    assert.equal(globMatch('!*', '!anything'), true);
  });

  test('globMatch treats an invalid pattern as matching nothing', () => {
    assert.equal(globMatch('[', '['), false);
    assert.equal(globMatch('[z-a]', 'b'), false);
  });
});

describe('compiled patterns', () => {
  test('are cached: compiling the same pattern twice returns the same matcher', () => {
    const a = compileGlob('cache-me-[0-9]*');
    const b = compileGlob('cache-me-[0-9]*');
    assert.ok(a.ok && b.ok);
    assert.equal(a.glob, b.glob);
    assert.ok(globCacheSize() > 0);
  });

  test('invalid patterns are cached too, with their error', () => {
    assert.equal(compileGlob('[cache-bad'), compileGlob('[cache-bad'));
  });

  test('the cache is bounded', () => {
    for (let i = 0; i < 10_050; i++) compileGlob(`bounded-${i}-*`);
    assert.ok(globCacheSize() <= 10_000, `cache size ${globCacheSize()}`);
  });

  test('a pattern without glob syntax is literal: matched by string equality', () => {
    const r = compileGlob('https://kubernetes.default.svc');
    assert.ok(r.ok);
    assert.equal(r.glob.literal, true);
    assert.equal(r.glob.match('https://kubernetes.default.svc'), true);
    assert.equal(r.glob.match('https://kubernetes.default.svc/'), false);
    const g = compileGlob('guestbook-*');
    assert.ok(g.ok);
    assert.equal(g.glob.literal, false);
  });

  test('a hostile pattern does not backtrack exponentially (many stars, no match)', () => {
    const pattern = '*a'.repeat(25) + 'b';
    const text = 'a'.repeat(200);
    assert.equal(matches(pattern, text), false);
    assert.equal(matches('{a,aa,aaa}*'.repeat(10) + 'b', text), false);
  });
});

// ---- property test: agreement with a naive backtracking reference on generated patterns ----

type Node =
  | { t: 'text'; s: string }
  | { t: 'star' }
  | { t: 'any1' }
  | { t: 'set'; chars: string; not: boolean }
  | { t: 'range'; lo: string; hi: string; not: boolean }
  | { t: 'alt'; options: Node[][] };

const CHARS = 'ab-.:/';
const textChar = fc.constantFrom(...CHARS.split(''), '*', '?', '{', '[', '\\', ',', '}', ']', '!');

function render(nodes: Node[], inGroup: boolean): string {
  return nodes
    .map((n) => {
      switch (n.t) {
        case 'text':
          // Escape everything the dialect might treat specially; `!` never needs it outside a class.
          return Array.from(n.s, (c) => ('*?[]{}\\'.includes(c) || (inGroup && c === ',') ? `\\${c}` : c)).join('');
        case 'star':
          return '*';
        case 'any1':
          return '?';
        case 'set':
          return `[${n.not ? '!' : ''}${n.chars}]`;
        case 'range':
          return `[${n.not ? '!' : ''}${n.lo}-${n.hi}]`;
        case 'alt':
          return `{${n.options.map((o) => render(o, true)).join(',')}}`;
      }
    })
    .join('');
}

function refMatch(nodes: Node[], text: string[]): boolean {
  if (nodes.length === 0) return text.length === 0;
  const [head, ...rest] = nodes as [Node, ...Node[]];
  switch (head.t) {
    case 'text': {
      const cs = Array.from(head.s);
      if (cs.length > text.length || cs.some((c, i) => text[i] !== c)) return false;
      return refMatch(rest, text.slice(cs.length));
    }
    case 'star':
      for (let i = 0; i <= text.length; i++) if (refMatch(rest, text.slice(i))) return true;
      return false;
    case 'any1':
      return text.length > 0 && refMatch(rest, text.slice(1));
    case 'set':
      return text.length > 0 && head.chars.includes(text[0] as string) !== head.not && refMatch(rest, text.slice(1));
    case 'range': {
      const c = text[0];
      if (c === undefined) return false;
      return (c >= head.lo && c <= head.hi) !== head.not && refMatch(rest, text.slice(1));
    }
    case 'alt':
      return head.options.some((o) => refMatch([...o, ...rest], text));
  }
}

function sample(nodes: Node[], choose: () => number): string {
  return nodes
    .map((n) => {
      switch (n.t) {
        case 'text':
          return n.s;
        case 'star':
          return CHARS.slice(0, choose() % 3);
        case 'any1':
          return CHARS[choose() % CHARS.length] as string;
        case 'set':
          return n.not ? 'z' : (n.chars[choose() % n.chars.length] as string);
        case 'range':
          return n.not ? '~' : n.lo;
        case 'alt':
          return sample(n.options[choose() % n.options.length] as Node[], choose);
      }
    })
    .join('');
}

const nodeArb: fc.Arbitrary<Node[]> = fc.letrec<{ seq: Node[]; node: Node }>((tie) => ({
  seq: fc.array(tie('node'), { maxLength: 5 }),
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({
      t: fc.constant('text' as const),
      s: fc.array(textChar, { minLength: 1, maxLength: 3 }).map((a) => a.join('')),
    }),
    fc.constant({ t: 'star' as const }),
    fc.constant({ t: 'any1' as const }),
    fc.record({
      t: fc.constant('set' as const),
      chars: fc
        .array(fc.constantFrom(...'ab-.:'.split('')), { minLength: 1, maxLength: 3 })
        .map((a) => a.join(''))
        .filter((s) => !s.startsWith('!') && !/^.-/.test(s) && !/^-/.test(s)),
      not: fc.boolean(),
    }),
    fc
      .record({
        t: fc.constant('range' as const),
        lo: fc.constantFrom('a', 'b', '.'),
        hi: fc.constantFrom('b', 'z', ':'),
        not: fc.boolean(),
      })
      .filter((r) => r.lo <= r.hi),
    fc.record({
      t: fc.constant('alt' as const),
      options: fc.array(tie('seq') as fc.Arbitrary<Node[]>, { minLength: 1, maxLength: 3 }),
    }),
  ),
})).seq;

test('property: the matcher agrees with a naive backtracking reference on generated patterns and texts', () => {
  fc.assert(
    fc.property(
      nodeArb,
      fc.array(fc.constantFrom(...CHARS.split(''), 'z', '!', '*'), { maxLength: 8 }),
      fc.array(fc.nat(), { minLength: 1, maxLength: 20 }),
      (nodes, randomText, choices) => {
        const pattern = render(nodes, false);
        const compiled = compileGlob(pattern);
        assert.ok(compiled.ok, `generated pattern ${JSON.stringify(pattern)} must compile`);
        let k = 0;
        const choose = () => choices[k++ % choices.length] as number;
        for (const text of [randomText.join(''), sample(nodes, choose)]) {
          assert.equal(
            compiled.glob.match(text),
            refMatch(nodes, Array.from(text)),
            `pattern ${JSON.stringify(pattern)} text ${JSON.stringify(text)}`,
          );
        }
      },
    ),
    { numRuns: 2000 },
  );
});
