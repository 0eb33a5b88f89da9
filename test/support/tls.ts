// A private certificate authority for the repository tests (issue 13): a CA and a server
// certificate for 127.0.0.1, 127.0.0.2, 127.0.0.10 and localhost signed by it, made with openssl (a test-time tool, like
// git). The servers of test/support serve with the certificate; a renderer trusts it only when
// argocd-tls-certs-cm holds the CA for 127.0.0.1.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestCA {
  /** PEM of the CA certificate (what argocd-tls-certs-cm holds). */
  caCert: string;
  /** The server's certificate and key, for 127.0.0.1 and localhost. */
  cert: string;
  key: string;
  /** A client certificate and key signed by the CA (mutual TLS). */
  clientCert: string;
  clientKey: string;
  /** Folder holding ca.pem, server.pem, server.key. */
  dir: string;
}

let made: TestCA | undefined;

function openssl(cwd: string, ...args: string[]): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    throw new Error(
      `openssl ${args[0]} failed (is openssl installed? apt-get install openssl): ${(err as Error).message}`,
    );
  }
}

/** A key and a certificate `<name>.pem` for `subject`, signed by the CA, with these extensions. */
function signed(dir: string, name: string, subject: string, extensions: string): void {
  writeFileSync(path.join(dir, `${name}.cnf`), extensions);
  openssl(
    dir,
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    subject,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
  );
  const ca = ['-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2'];
  openssl(dir, 'x509', '-req', '-in', `${name}.csr`, ...ca, '-extfile', `${name}.cnf`, '-out', `${name}.pem`);
}

/** One CA per test process. */
export function testCA(): TestCA {
  if (made) return made;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'impersync-ca-'));
  openssl(
    dir,
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=impersync test CA',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
  );
  signed(
    dir,
    'server',
    '/CN=127.0.0.1',
    'subjectAltName=IP:127.0.0.1,IP:127.0.0.2,IP:127.0.0.10,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  signed(dir, 'client', '/CN=impersync renderer', 'extendedKeyUsage=clientAuth\n');
  const read = (f: string) => readFileSync(path.join(dir, f), 'utf8');
  made = {
    caCert: read('ca.pem'),
    cert: read('server.pem'),
    key: read('server.key'),
    clientCert: read('client.pem'),
    clientKey: read('client.key'),
    dir,
  };
  return made;
}
