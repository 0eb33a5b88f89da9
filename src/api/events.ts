// The reasons of the Kubernetes Events recorded on Applications, named once, as the condition types
// are (status.ts). A new ComparisonError or InvalidSpecError condition is recorded under its type.
import { CONDITION } from './status.ts';

export const EVENT_REASON = {
  /** An operation began: an automated sync was set, or the operation worker started one. */
  OperationStarted: 'OperationStarted',
  OperationCompleted: 'OperationCompleted',
  OperationFailed: 'OperationFailed',
  /** spec §5: deny or error; nothing was sent to the destination. */
  ImpersonationDenied: 'ImpersonationDenied',
  /** spec §5: no entry matched and enforcement is off: the controller's own credential is used. */
  ImpersonationFallback: 'ImpersonationFallback',
  /** The impersonated ServiceAccount does not exist: the sync stops (controller/sa-check.ts). */
  ServiceAccountNotFound: 'ServiceAccountNotFound',
  /** A comparison or sync was refused by RBAC: every right its identity lacks, in one message (controller/rights.ts). */
  MissingRights: 'MissingRights',
  DeletionFailed: 'DeletionFailed',
  ResourcesDeleted: 'ResourcesDeleted',
  ComparisonError: CONDITION.ComparisonError,
  InvalidSpecError: CONDITION.InvalidSpecError,
  SharedResourceWarning: CONDITION.SharedResourceWarning,
  UnsupportedFieldWarning: CONDITION.UnsupportedFieldWarning,
} as const;
export type EventReason = (typeof EVENT_REASON)[keyof typeof EVENT_REASON];
