// Health as Argo CD assesses it: built-in checks (gitops-engine's and the ones Argo CD bundles),
// argocd-cm Lua customizations and an operator's folder of them, run in a sandboxed Lua VM, and the
// aggregate over an Application's resources.
export type { HealthStatus, HealthStatusCode } from './types.ts';
export { HEALTH_ORDER, isWorse, isHealthStatusCode } from './types.ts';
export type { HealthAssessor } from './builtin.ts';
export { builtinAssessor, builtinHealth, hasBuiltinCheck, pendingDeletion } from './builtin.ts';
export type { AggregateHealth, AggregateInput } from './aggregate.ts';
export { ANNOTATION_IGNORE_HEALTHCHECK, aggregateHealth, healthCheckErrors, resourceHealthError } from './aggregate.ts';
export type { AssessorOptions } from './assessor.ts';
export { createHealthAssessor, overrideKeyOf } from './assessor.ts';
export type { HealthCustomizations, HealthOverride } from './customizations.ts';
export { HEALTH_LIBRARY_KEY, RESOURCE_CUSTOMIZATIONS_KEY, readHealthCustomizations } from './customizations.ts';
export {
  ARGOCD_HEALTH_VERSION,
  HEALTH_SCRIPTS_DIR_ENV,
  IMAGE_HEALTH_SCRIPTS_DIR,
  defaultHealthScriptsDir,
} from './bundled.ts';
export type { HealthLibrary } from './library.ts';
export { HealthLibraries, readHealthLibrary } from './library.ts';
export { LuaRunner, DEFAULT_BUDGET } from './lua/runner.ts';
export type { LuaBudget } from './lua/runner.ts';
export { INVALID_HEALTH_STATUS, healthFromLua } from './lua/result.ts';
