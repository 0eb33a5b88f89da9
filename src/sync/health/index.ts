// Health as Argo CD assesses it: built-in checks (gitops-engine's and the ones Argo CD bundles),
// and the aggregate over an Application's resources.
export type { HealthStatus, HealthStatusCode } from './types.ts';
export { HEALTH_ORDER, isWorse, isHealthStatusCode } from './types.ts';
export type { HealthAssessor } from './builtin.ts';
export { builtinAssessor, builtinHealth, hasBuiltinCheck, pendingDeletion } from './builtin.ts';
export type { AggregateHealth, AggregateInput } from './aggregate.ts';
export { ANNOTATION_IGNORE_HEALTHCHECK, aggregateHealth, healthCheckErrors, resourceHealthError } from './aggregate.ts';
