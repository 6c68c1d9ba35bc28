import { DriverError, type RunRequest } from '../driver.js';

/** Podman/docker container names: [a-zA-Z0-9][a-zA-Z0-9_.-]* */
export function containerName(instanceName: string, revisionId: string): string {
  const clean = (value: string) =>
    value
      .toLowerCase()
      .replace(/[^a-z0-9_.-]+/g, '-')
      .replace(/^[^a-z0-9]+|-+$/g, '');
  const instance = clean(instanceName).slice(0, 40).replace(/-+$/, '') || 'deployment';
  const revision = clean(revisionId).slice(0, 8) || 'revision';
  return `berth-${instance}-${revision}`;
}

export function isContainerName(value: string): boolean {
  return /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(value);
}

export function validateRequest(request: RunRequest): void {
  if (!request.image || request.image.startsWith('-') || /\s/.test(request.image)) {
    throw new DriverError(`'${request.image}' is not a valid image reference`);
  }
  for (const key of Object.keys(request.env)) {
    // Such names cannot be expressed in an env file (or an environment) without being misread.
    if (!/^[^=\s#\0][^=\s\0]*$/.test(key)) {
      throw new DriverError(`Environment variable name '${key}' is not valid: names cannot be empty, start with '#', or contain '=' or whitespace`);
    }
    if (request.env[key]?.includes('\0')) throw new DriverError(`The value of environment variable ${key} contains a NUL byte, which no environment can hold`);
  }
  const { cpu, memoryMb } = request.resources;
  if (cpu !== undefined && !(Number.isFinite(cpu) && cpu > 0)) throw new DriverError(`CPU limit ${cpu} is not a positive number`);
  if (memoryMb !== undefined && !(Number.isInteger(memoryMb) && memoryMb >= 6)) {
    throw new DriverError(`Memory limit ${memoryMb} MB is not valid: the container runtime needs a whole number of at least 6 MB`);
  }
}

export function describeLimits(resources: RunRequest['resources']): string {
  const parts: string[] = [];
  if (resources.cpu !== undefined) parts.push(`cpu ${resources.cpu}`);
  if (resources.memoryMb !== undefined) parts.push(`memory ${resources.memoryMb} MB`);
  return parts.join(', ');
}
