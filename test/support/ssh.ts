// A Git-over-SSH server on 127.0.0.1 for the repository tests (issue 13), made with the ssh2
// package (test-only): it accepts one client key, runs `git upload-pack` for repositories under
// its root, and nothing else. Its host key is fresh per server, so a renderer reaches it only with
// the known_hosts line it prints (argocd-ssh-known-hosts-cm), or with host key checking off.
import { spawn } from 'node:child_process';
import { timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import ssh2 from 'ssh2';

const { Server, utils } = ssh2;

export interface SshKeyPair {
  /** OpenSSH private key (what sshPrivateKey holds). */
  privateKey: string;
  /** `ssh-ed25519 AAAA... comment` */
  publicKey: string;
}

export function sshKeyPair(comment = 'impersync-test'): SshKeyPair {
  // ssh2 1.17 writes about one ed25519 pair in 256 that it cannot read back (it strips a public key's
  // leading zero byte: mscdex/ssh2#1513); such a pair is drawn again.
  for (let attempt = 0; attempt < 16; attempt++) {
    const k = utils.generateKeyPairSync('ed25519', { comment });
    if (!(utils.parseKey(k.private) instanceof Error) && !(utils.parseKey(k.public) instanceof Error))
      return { privateKey: k.private, publicKey: k.public };
  }
  throw new Error('ssh2 made 16 ed25519 key pairs it cannot read back');
}

export interface GitSshServer {
  port: number;
  /** `ssh://git@127.0.0.1:<port>/<abs path>` of a repository folder. */
  url(dir: string): string;
  /** The known_hosts line of this server's host key. */
  knownHostsLine: string;
  /** Connections that authenticated. */
  sessions(): number;
  close(): Promise<void>;
}

export async function startGitSshServer(root: string, clientPublicKey: string): Promise<GitSshServer> {
  const host = sshKeyPair('impersync-test-host');
  const allowed = utils.parseKey(clientPublicKey);
  if (allowed instanceof Error) throw allowed;
  let sessions = 0;
  const server = new Server({ hostKeys: [host.privateKey] }, (client) => {
    client.on('authentication', (ctx) => {
      if (ctx.method !== 'publickey') return ctx.reject(['publickey']);
      const same =
        ctx.key.algo === allowed.type &&
        ctx.key.data.length === allowed.getPublicSSH().length &&
        timingSafeEqual(ctx.key.data, allowed.getPublicSSH());
      if (!same) return ctx.reject(['publickey']);
      if (ctx.signature && ctx.blob && !allowed.verify(ctx.blob, ctx.signature, ctx.hashAlgo))
        return ctx.reject(['publickey']);
      ctx.accept();
    });
    client.on('ready', () => {
      sessions++;
      client.on('session', (accept) => {
        const session = accept();
        session.on('exec', (acceptExec, reject, info) => {
          const m = /^git-upload-pack '([^']+)'$/.exec(info.command);
          const dir = m ? path.resolve('/', m[1] as string) : undefined;
          if (!dir || !dir.startsWith(root)) return reject();
          const channel = acceptExec();
          const git = spawn('git', ['upload-pack', dir], {
            env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
          });
          channel.pipe(git.stdin);
          git.stdout.pipe(channel, { end: false });
          git.stderr.pipe(channel.stderr, { end: false });
          git.stdin.on('error', () => {});
          git.on('close', (code) => {
            channel.exit(code ?? 1);
            channel.end();
          });
        });
      });
    });
    client.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const [type, key] = host.publicKey.split(' ');
  return {
    port,
    url: (dir) => `ssh://git@127.0.0.1:${port}${dir}`,
    knownHostsLine: `[127.0.0.1]:${port} ${type} ${key}`,
    sessions: () => sessions,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
