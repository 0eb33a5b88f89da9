// A CPU profile of kube-apiserver over a stretch of a benchmark (the control plane started with
// `profiling: true`), written as Go's pprof file: `go tool pprof -top <file>` reads it.
import { writeFile } from 'node:fs/promises';
import https from 'node:https';
import type { TestControlPlane } from '../../test/support/index.ts';

/** Asks for `seconds` of CPU profile now; resolves with the file once the API server sent it. */
export async function apiserverCpuProfile(cp: TestControlPlane, seconds: number, file: string): Promise<string> {
  const { server, caPem, token } = cp.processes.admin;
  const body = await new Promise<Buffer>((resolve, reject) => {
    const req = https.get(
      new URL(`/debug/pprof/profile?seconds=${seconds}`, server),
      { ca: caPem, headers: { authorization: `Bearer ${token}` }, agent: false, timeout: (seconds + 60) * 1000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const all = Buffer.concat(chunks);
          if (res.statusCode === 200) resolve(all);
          else
            reject(
              new Error(
                `kube-apiserver /debug/pprof/profile answered ${res.statusCode}: ${all.toString('utf8').slice(0, 300)}`,
              ),
            );
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('kube-apiserver /debug/pprof/profile timed out')));
    req.on('error', reject);
  });
  await writeFile(file, body);
  return file;
}
