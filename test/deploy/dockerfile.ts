// Reading a Dockerfile and a .dockerignore well enough to check them in tests, without Docker:
// instructions per stage (continuations joined, comments dropped, FROM's ${ARG} filled from the
// global ARG defaults), and .dockerignore's rules (last matching pattern wins, `!` re-includes,
// `**` spans folders, a pattern that matches a folder matches what is inside it).

export type Instruction = { kind: string; args: string };
export type Stage = { name: string; from: string; instructions: Instruction[] };
export type Dockerfile = { args: Map<string, string>; stages: Stage[] };

export function parseDockerfile(text: string): Dockerfile {
  const lines: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (pending !== '' && line.startsWith('#')) continue; // comments inside a continued RUN
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1) + ' ';
      continue;
    }
    lines.push((pending + line).trim());
    pending = '';
  }
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const line of lines) {
    const [kind = '', ...rest] = line.split(/\s+/);
    const argText = rest.join(' ');
    const upper = kind.toUpperCase();
    if (upper === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(argText);
      if (!m) throw new Error(`Dockerfile: cannot read FROM ${argText}`);
      const from = (m[1] ?? '').replace(/\$\{(\w+)\}/g, (_, name: string) => args.get(name) ?? '');
      stages.push({ name: m[2] ?? String(stages.length), from, instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) {
      // ARGs before the first FROM: global defaults, usable in FROM.
      if (upper === 'ARG') {
        const [name = '', value = ''] = argText.split('=');
        args.set(name, value);
      }
      continue;
    }
    stage.instructions.push({ kind: upper, args: argText });
  }
  return { args, stages };
}

function patternToRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (pattern.startsWith('**/', i)) {
      re += '(?:.*/)?';
      i += 2;
    } else if (pattern.startsWith('/**', i) && i + 3 === pattern.length) {
      re += '(?:/.*)?';
      i += 2;
    } else if (pattern.startsWith('**', i)) {
      re += '.*';
      i += 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** True when `path` (relative to the context, `/`-separated) is left out of the build context. */
export function matchesDockerignore(ignoreText: string, path: string): boolean {
  const rules = ignoreText
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) =>
      l.startsWith('!')
        ? { include: true, re: patternToRegExp(l.slice(1).replace(/^\/+/, '')) }
        : { include: false, re: patternToRegExp(l.replace(/^\/+/, '')) },
    );
  const parts = path.split('/');
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let excluded = false;
  for (const rule of rules) {
    if (prefixes.some((p) => rule.re.test(p))) excluded = !rule.include;
  }
  return excluded;
}
