// A client of one argocd-cmp-server over its Unix socket, speaking the gRPC service the
// repo-server speaks (plugin.ConfigManagementPluginService). Every call carries the render's
// deadline (the cmp-server stops its command a little before it) and its abort signal, and an
// answer larger than the render's output limit is refused by gRPC itself before it is buffered.
import * as grpc from '@grpc/grpc-js';
import {
  decodeCheckPluginConfigurationResponse,
  decodeManifestResponse,
  decodeParametersAnnouncementResponse,
  decodeRepositoryResponse,
  fileRequest,
  metadataRequest,
  type ManifestRequestMetadata,
  type ManifestResponse,
  type ParameterAnnouncement,
  type PluginConfiguration,
  type RepositoryResponse,
} from './wire.ts';

const SERVICE = '/plugin.ConfigManagementPluginService';

/** The app folder as the cmp-server receives it: metadata, then the tar.gz in chunks. */
export interface AppStream {
  metadata: ManifestRequestMetadata;
  chunks: Iterable<Uint8Array>;
}

export interface CallLimits {
  /** When the call must be over (the render's remaining time). */
  deadline: Date;
  signal?: AbortSignal | undefined;
}

export class PluginClient {
  readonly #client: grpc.Client;

  constructor(socketPath: string, maxAnswerBytes: number) {
    this.#client = new grpc.Client(`unix:${socketPath}`, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': maxAnswerBytes,
      'grpc.max_send_message_length': 100 * 1024 * 1024,
      // One socket, one request at a time: no retries behind the render's back.
      'grpc.enable_retries': 0,
    });
  }

  close(): void {
    this.#client.close();
  }

  checkPluginConfiguration(limits: CallLimits): Promise<PluginConfiguration> {
    return new Promise((resolve, reject) => {
      let stopCancelling = (): void => {};
      let over = false;
      const call = this.#client.makeUnaryRequest(
        `${SERVICE}/CheckPluginConfiguration`,
        (b: Buffer) => b,
        decodeCheckPluginConfigurationResponse,
        Buffer.alloc(0), // google.protobuf.Empty
        new grpc.Metadata(),
        { deadline: limits.deadline },
        (err, res) => {
          over = true;
          stopCancelling();
          if (err || !res) reject(err ?? new Error('no answer'));
          else resolve(res);
        },
      );
      stopCancelling = cancelOnAbort(call, limits.signal);
      if (over) stopCancelling();
    });
  }

  matchRepository(stream: AppStream, limits: CallLimits): Promise<RepositoryResponse> {
    return this.#clientStream('MatchRepository', decodeRepositoryResponse, stream, limits);
  }

  generateManifest(stream: AppStream, limits: CallLimits): Promise<ManifestResponse> {
    return this.#clientStream('GenerateManifest', decodeManifestResponse, stream, limits);
  }

  getParametersAnnouncement(stream: AppStream, limits: CallLimits): Promise<ParameterAnnouncement[]> {
    return this.#clientStream('GetParametersAnnouncement', decodeParametersAnnouncementResponse, stream, limits);
  }

  #clientStream<T>(method: string, decodeAnswer: (b: Buffer) => T, stream: AppStream, limits: CallLimits): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // Aborted once the call has its status (an answer, an error, the deadline): the writes stop
      // then, rather than wait forever for a drain that will not come, holding the app's archive.
      const finished = new AbortController();
      let stopCancelling = (): void => {};
      const call = this.#client.makeClientStreamRequest(
        `${SERVICE}/${method}`,
        (b: Buffer) => b,
        decodeAnswer,
        new grpc.Metadata(),
        { deadline: limits.deadline },
        (err, res) => {
          finished.abort();
          stopCancelling();
          if (err || res === undefined) reject(err ?? new Error('no answer'));
          else resolve(res);
        },
      );
      stopCancelling = cancelOnAbort(call, limits.signal);
      if (finished.signal.aborted) stopCancelling();
      void sendStream(call, stream, finished.signal).catch((err: unknown) => {
        if (finished.signal.aborted) return;
        call.cancel();
        reject(err instanceof Error ? err : new Error(String(err)));
      });
    });
  }
}

/**
 * Writes the metadata and the chunks, waiting for the socket to drain between them; stops (and lets
 * go of the chunks) as soon as `finished` says the call is over.
 */
export async function sendStream(
  call: grpc.ClientWritableStream<Buffer>,
  stream: AppStream,
  finished: AbortSignal,
): Promise<void> {
  const write = (msg: Buffer) =>
    new Promise<void>((resolve, reject) => {
      if (finished.aborted) return reject(new Error('the call is over'));
      if (call.write(msg)) return resolve();
      const drained = () => {
        finished.removeEventListener('abort', over);
        resolve();
      };
      const over = () => {
        call.removeListener('drain', drained);
        reject(new Error('the call is over'));
      };
      call.once('drain', drained);
      finished.addEventListener('abort', over, { once: true });
    });
  await write(metadataRequest(stream.metadata));
  for (const chunk of stream.chunks) await write(fileRequest(chunk));
  if (!finished.aborted) call.end();
}

/** Cancels the call when the render is aborted; the returned function removes the listener once the call is over. */
function cancelOnAbort(call: grpc.Call, signal: AbortSignal | undefined): () => void {
  if (!signal) return () => {};
  if (signal.aborted) {
    call.cancel();
    return () => {};
  }
  const cancel = () => call.cancel();
  signal.addEventListener('abort', cancel, { once: true });
  return () => signal.removeEventListener('abort', cancel);
}
