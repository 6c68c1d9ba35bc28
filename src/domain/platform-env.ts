/**
 * Environment variables the platform sets for every deployment, from what it knows of
 * the deployment and revision. A deployment's secrets may not override them
 * (domain/secrets.ts reserves every name here).
 */
export function platformVariables(deployment: { id: string; name: string }, revision: { id: string }): Record<PlatformVariable, string> {
  return {
    LANGSMITH_DEPLOYMENT_NAME: deployment.name,
    LANGSMITH_HOST_PROJECT_ID: deployment.id,
    LANGSMITH_HOST_PROJECT_NAME: deployment.name,
    LANGSMITH_HOST_REVISION_ID: revision.id,
  };
}

export const PLATFORM_VARIABLES = [
  'LANGSMITH_DEPLOYMENT_NAME',
  'LANGSMITH_HOST_PROJECT_ID',
  'LANGSMITH_HOST_PROJECT_NAME',
  'LANGSMITH_HOST_REVISION_ID',
] as const;

/** The variables that name the revision itself: a copy of a revision (a rollback) differs from it only there. */
export const REVISION_VARIABLES: PlatformVariable[] = ['LANGSMITH_HOST_REVISION_ID'];

export type PlatformVariable = (typeof PLATFORM_VARIABLES)[number];
