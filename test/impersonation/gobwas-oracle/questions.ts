// Writes the questions for the gobwas oracle (a JSON array of {pattern, texts}) to stdout:
// hand-picked patterns (spec §2's rules, realistic server/namespace globs, every error) and seeded
// random ones over the glob alphabet. Regenerate the fixture with:
//   node test/impersonation/gobwas-oracle/questions.ts > /tmp/q.json
//   (cd test/impersonation/gobwas-oracle && go run .) < /tmp/q.json > test/impersonation/fixtures/gobwas.json
const handPicked = [
  '', '*', '**', '***', '?', '??', 'a?c', '[abc]', '[a-z]', '[!a-z]', '[!abc]', '{a,b,c}', '{a,b', 'x{a,b', '{a,{b,c}',
  '{', '{,}', '}', ']', 'a]b', 'a}b', '!a', 'a!b', 'a,b', '{a\\,b}', '\\*', '\\?', '\\[a]', 'a\\', '\\', '\\\\',
  '[', '[]', '[!]', '[a-bc]', '[z-a]', '[a-]', '[a-]]', '[\\-a]', '[a-\\]]', '[!-a]', '[!!]', '[a!]', '[]a]', '[\\]]',
  '[a-z', '[a', '[!', '[a-z][', '[z-a][', '{[z-a],b}', '[é-ü]', 'a\u0000b', '*\u0000abc', '[a\u0000]', 'a\ufffdb',
  'https://kubernetes.default.svc', 'https://*', '*.svc', 'https://*.example.com:6443', 'https://remote.example:6443',
  'guestbook', 'guestbook-*', 'guestbook-?', 'guestbook-{dev,stage}', 'team-[a-c]-*', '*-prod', '*guest*', 'a*b*c',
  'kube-*', '[!k]*', 'ns-[0-9][0-9]', '*:*', '*/*', 'https://[a-z]*.example.com',
];
const texts = [
  '', 'a', 'b', 'c', 'ab', 'abc', 'a,b', 'a]b', 'a}b', '!a', '*', '?', '[a]', '\\', '-', ']', '!', 'é', 'ü', 'x', 'xa',
  'https://kubernetes.default.svc', 'https://remote.example:6443', 'https://a.example.com:6443', 'https://.example.com',
  'guestbook', 'guestbook-dev', 'guestbook-stage', 'guestbook-prod', 'guestbook-x', 'guestbook-', 'team-b-api',
  'kube-system', 'ns-42', 'a:b', 'a/b', 'default',
];

let seed = 20240611;
const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const pick = (s: string) => s[Math.floor(rnd() * s.length)] as string;
const random = (alphabet: string, max: number) => {
  let out = '';
  const len = Math.floor(rnd() * (max + 1));
  for (let i = 0; i < len; i++) out += pick(alphabet);
  return out;
};

const questions = handPicked.map((pattern) => ({ pattern, texts }));
for (let i = 0; i < 400; i++) {
  questions.push({ pattern: random('ab*?[]{}!,-\\', 7), texts: Array.from({ length: 10 }, () => random('ab-!,{}[]\\*?', 5)) });
}
for (let i = 0; i < 200; i++) {
  questions.push({ pattern: random('ab.:/-*?[]', 10), texts: Array.from({ length: 10 }, () => random('ab.:/-', 8)) });
}
process.stdout.write(JSON.stringify(questions));
