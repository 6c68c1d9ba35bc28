/**
 * The code-host layer: integrations that list repositories (`git`, `github`), a cache of
 * repository mirrors that writes commits out as directories, and push notifications
 * (GitHub webhooks, or polling branch heads for plain git remotes). The rest of Berth
 * reaches it only through this file.
 */
export { CodehostError } from './errors.js';
export { setGitConcurrency } from './git-slots.js';
export type { GitHubAppProvider, RepositoryName } from './github-provider.js';
export { type GitHubSettings, type GitSettings, gitHubAppOf, type ProviderOptions, providerFor } from './integration-provider.js';
export { MirrorCache } from './mirror.js';
export { remoteBranchHeads, resolveRemote } from './remote.js';
export type { CodehostProvider, CodehostRepository, GitAuth } from './types.js';
export { sameRepository } from './url.js';
export { type GitHubPullRequest, type GitHubPush, pushMatchesRepository, readGitHubDelivery, requireGitHubSignatureHeader, WebhookError } from './webhooks.js';
