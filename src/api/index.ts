// The objects impersync reads and writes, as zod schemas and their types.
export * from './meta.ts';
export * from './spec.ts';
export * from './status.ts';
export * from './events.ts';
export * from './application.ts';
export * from './appproject.ts';
export * from './configmap.ts';
export * from './cluster.ts';
export * from './manifest.ts';
export * from './serviceaccount.ts';
export * from './limits.ts';
export * from './repository.ts';
export * from './attribution.ts';
export * from './tool-settings.ts';
