// Talking to API servers. The controller and the CLI import from here; sync/ and source/ import
// only `./types.ts` (types), never the factory or credentials (ARCHITECTURE.md, the identity rule).
export * from './types.ts';
export { DestinationClientFactory } from './factory.ts';
export {
  CredentialError,
  credentialForCluster,
  credentialFromKubeConfig,
  loadControllerCredential,
  loadKubeConfig,
} from './credentials.ts';
export type { Credential, KubeConfigSource } from './credentials.ts';
export { DEFAULT_FIELD_MANAGER } from './client.ts';
export { ControlClient, connectControlCluster } from './control.ts';
export type { RequestIdentity, ResponseHook } from './transport.ts';
