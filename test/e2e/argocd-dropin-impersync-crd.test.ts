// Argo CD's server, repo-server and CLI against impersync on impersync's own Application CRD (with
// a status subresource): the drop-in suite of argocd-dropin-suite.ts.
import { dropinSuite } from './argocd-dropin-suite.ts';

dropinSuite('impersync');
