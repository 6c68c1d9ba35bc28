/**
 * Associated data of a build job's sealed columns (migration 021): the source's credentials,
 * written by the engine's runner driver and read by the runner protocol, and the built
 * image's langgraph.json env, the other way round. Binds each ciphertext to its job.
 */
export const jobSourceContext = (jobId: string) => `build-job:${jobId}:source`;
export const jobEnvContext = (jobId: string) => `build-job:${jobId}:env`;
