// Where Argo CD's CMP sidecars put their sockets (common.DefaultPluginSockFilePath), apart from
// the client so that the renderer's flags can name it without loading gRPC.
export const DEFAULT_PLUGIN_SOCKET_DIR = '/home/argocd/cmp-server/plugins';
