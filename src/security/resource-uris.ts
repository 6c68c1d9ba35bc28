/** Associated data of a provisioned database's URI: it decrypts only for its deployment and kind. */
export const resourceUriContext = (deploymentId: string, kind: string) => `deployment_resource:${deploymentId}:${kind}`;
