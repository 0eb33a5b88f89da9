// The token the controller and the install's renderer share (renderer/protocol.ts). It lives in a
// Secret of the control namespace that the controller makes itself when it is missing (32 random
// bytes), so that no install needs to generate one (a Helm `lookup` breaks under `helm template`,
// and plain manifests cannot hold a secret). The renderer Pod mounts the Secret as a file (optional,
// so it starts before the Secret exists) and re-reads it when it changes; the controller reads it
// through the API and reads it again when the renderer refuses its token.
import { randomBytes } from 'node:crypto';
import type { ControlClient } from '../kube/control.ts';

export const RENDERER_TOKEN_KEY = 'token';

/** The current token of Secret `name` in `namespace`, creating the Secret when there is none. */
export async function rendererToken(control: ControlClient, namespace: string, name: string): Promise<string> {
  const secretPath = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`;
  for (let attempt = 0; attempt < 3; attempt++) {
    const got = await control.request<{ data?: Record<string, string> }>({ method: 'GET', path: secretPath });
    if (got.ok) {
      const data = got.value.data ?? {};
      const token = Buffer.from(data[RENDERER_TOKEN_KEY] ?? '', 'base64')
        .toString('utf8')
        .trim();
      if (token !== '') return token;
      throw new Error(
        `Secret ${namespace}/${name} has no '${RENDERER_TOKEN_KEY}': delete it and the controller makes a new one`,
      );
    }
    if (got.error.code !== 404)
      throw new Error(
        `reading the renderer's token Secret ${namespace}/${name}: ${got.error.code} ${got.error.message}`,
      );
    const created = await control.request({
      method: 'POST',
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`,
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name,
          namespace,
          labels: { 'app.kubernetes.io/name': 'impersync', 'app.kubernetes.io/component': 'renderer' },
          annotations: {
            'impersync.io/purpose': 'the bearer token between impersync-controller and impersync-renderer',
          },
        },
        type: 'Opaque',
        data: { [RENDERER_TOKEN_KEY]: Buffer.from(randomBytes(32).toString('hex')).toString('base64') },
      },
    });
    // 409: another replica made it meanwhile; read that one.
    if (!created.ok && created.error.code !== 409) {
      throw new Error(
        `creating the renderer's token Secret ${namespace}/${name}: ${created.error.code} ${created.error.message}`,
      );
    }
  }
  throw new Error(`the renderer's token Secret ${namespace}/${name} could not be read or made`);
}
