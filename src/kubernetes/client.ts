import { type Cluster, type Configuration, createConfiguration, type KubeConfig, ServerConfiguration } from '@kubernetes/client-node';

/**
 * The client's configuration for `cluster`, authenticated by `kubeConfig`, with every request
 * bound to `signal`: the caller's cancellation and its own timeout, which the client's
 * object API takes no other way.
 */
export function boundConfiguration(kubeConfig: KubeConfig, cluster: Cluster, signal: AbortSignal): Configuration {
  return createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kubeConfig },
    promiseMiddleware: [
      {
        pre: async (context) => {
          context.setSignal(signal);
          return context;
        },
        post: async (response) => response,
      },
    ],
  });
}

/** The `message` of a Kubernetes Status body, whatever form the client handed it over in. */
export function statusMessage(body: unknown): string {
  let parsed = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return body.slice(0, 500);
    }
  }
  const message = (parsed as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : 'no details';
}
