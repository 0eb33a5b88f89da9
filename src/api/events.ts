// The reasons of the Kubernetes Events recorded on Applications, named once, as the condition types
// are (status.ts). A new ComparisonError or InvalidSpecError condition is recorded under its type.
import { CONDITION } from './status.ts';

export const EVENT_REASON = {
  // Argo CD's reasons (util/argo/audit_logger.go), with its controller's messages.
  /** An operation began: an automated sync was set ("Initiated automated sync to '<rev>'"). */
  OperationStarted: 'OperationStarted',
  /** An operation ended: Normal "Sync operation to <rev> succeeded", Warning "... failed: <message>". */
  OperationCompleted: 'OperationCompleted',
  /** The sync or health status changed: "Updated sync status: OutOfSync -> Synced". */
  ResourceUpdated: 'ResourceUpdated',
  /** Argo CD's for a deletion that failed: "Unable to delete application resources: <error>". */
  StatusRefreshed: 'StatusRefreshed',
  // impersync's own, where Argo CD has none.
  /** spec §5: deny or error; nothing was sent to the destination. */
  ImpersonationDenied: 'ImpersonationDenied',
  /** spec §5: no entry matched and enforcement is off: the controller's own credential is used. */
  ImpersonationFallback: 'ImpersonationFallback',
  /** The impersonated ServiceAccount does not exist: the sync stops (controller/sa-check.ts). */
  ServiceAccountNotFound: 'ServiceAccountNotFound',
  /** A comparison or sync was refused by RBAC: every right its identity lacks, in one message (controller/rights.ts). */
  MissingRights: 'MissingRights',
  ResourcesDeleted: 'ResourcesDeleted',
  ComparisonError: CONDITION.ComparisonError,
  InvalidSpecError: CONDITION.InvalidSpecError,
  SharedResourceWarning: CONDITION.SharedResourceWarning,
  UnsupportedFieldWarning: CONDITION.UnsupportedFieldWarning,
} as const;
export type EventReason = (typeof EVENT_REASON)[keyof typeof EVENT_REASON];
