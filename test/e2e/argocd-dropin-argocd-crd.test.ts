// Argo CD's server, repo-server and CLI against impersync on Argo CD's own CRDs as an Argo CD
// install has them (the Application CRD without a status subresource, from the release's
// manifests/crds/): the drop-in suite of argocd-dropin-suite.ts.
import { dropinSuite } from './argocd-dropin-suite.ts';

dropinSuite('argocd');
