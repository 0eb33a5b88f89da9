// The lines of argocd-ssh-known-hosts-cm that can match one SSH host, as OpenSSH matches them
// (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT"): comma-separated patterns with `*` and `?`, `!` negation,
// `[host]:port` for ports other than 22, and hashed `|1|salt|hash` names. A render request carries
// only these lines; ssh still decides, with StrictHostKeyChecking on.
import { createHmac } from 'node:crypto';

export function knownHostsFor(data: string, host: string, port: number | undefined): string {
  const name = port === undefined || port === 22 ? host : `[${host}]:${port}`;
  const out: string[] = [];
  for (const raw of data.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    const patterns = (fields[0]?.startsWith('@') ? fields[1] : fields[0]) ?? '';
    if (hostMatches(patterns, name)) out.push(line);
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

function hostMatches(patterns: string, name: string): boolean {
  let matched = false;
  for (const p of patterns.split(',')) {
    if (p.startsWith('|1|')) {
      const [, , salt, hash] = p.split('|');
      if (salt && hash && createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash) {
        matched = true;
      }
      continue;
    }
    const negated = p.startsWith('!');
    if (wildcard(negated ? p.slice(1) : p, name)) {
      if (negated) return false;
      matched = true;
    }
  }
  return matched;
}

function wildcard(pattern: string, text: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    'i',
  );
  return re.test(text);
}
