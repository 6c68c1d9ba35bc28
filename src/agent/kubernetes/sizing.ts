import { RESOURCE_SPEC_DEFAULTS, type ResourceSpec } from '../../domain/deployment-config.js';
import { ManifestError } from './syntax.js';

/** Requests and limits in Kubernetes quantities; absent members are not set. */
export interface Compute {
  requests: { cpu?: string; memory?: string };
  limits: { cpu?: string; memory?: string };
}

export interface Scale {
  /** Replicas when nothing autoscales (and the HPA's minimum when something does). */
  min: number;
  /** Greater than `min` only when an HPA is rendered. */
  max: number;
}

/** The numeric half of a resource spec, with defaults filled in and checked. */
export interface Sizing {
  apiServer: { scale: Scale; compute: Compute; cpuRequested: boolean };
  /** Null when the spec asks for no queue workers (the API server then runs the jobs). */
  queue: { scale: Scale; compute: Compute; cpuRequested: boolean } | null;
  database: { compute: Compute; storageGi: number; maxConnections: number | null };
  redis: { memoryMb: number; compute: Compute };
}

/**
 * Defaults for the parts the API documents no default for: the database and Redis that
 * Berth provisions next to each deployment. Storage as the public chart's 8 GiB; queue
 * workers are sized like the API server unless told otherwise.
 */
export const BACKING_DEFAULTS = { db_cpu: 0.5, db_memory_mb: 1024, db_storage_gi: 8, redis_memory_mb: 512, redis_cpu: 0.1 } as const;

export function sizing(spec: ResourceSpec): Sizing {
  const read = reader(spec);
  const apiCpu = read.number('cpu') ?? RESOURCE_SPEC_DEFAULTS.cpu;
  const apiMemory = read.number('memory_mb') ?? RESOURCE_SPEC_DEFAULTS.memory_mb;
  const apiServer = {
    scale: scale(read, 'min_scale', 'max_scale', RESOURCE_SPEC_DEFAULTS.min_scale, RESOURCE_SPEC_DEFAULTS.max_scale),
    compute: compute(read, '', apiCpu, apiMemory),
    cpuRequested: apiCpu > 0,
  };
  const queueMin = read.integer('queue_min_scale') ?? 0;
  const queueMax = read.integer('queue_max_scale') ?? queueMin;
  const queueCpu = read.number('queue_cpu') ?? apiCpu;
  const queue =
    Math.max(queueMin, queueMax) > 0
      ? {
          scale: scale(read, 'queue_min_scale', 'queue_max_scale', 0, queueMin),
          compute: compute(read, 'queue_', queueCpu, read.number('queue_memory_mb') ?? apiMemory),
          cpuRequested: queueCpu > 0,
        }
      : null;
  const storageGi = read.number('db_storage_gi') ?? BACKING_DEFAULTS.db_storage_gi;
  if (storageGi <= 0) throw new ManifestError('resource_spec.db_storage_gi', 'resource_spec.db_storage_gi must be greater than 0.');
  const maxConnections = read.integer('db_max_connections');
  if (maxConnections !== undefined && maxConnections < 1) {
    throw new ManifestError('resource_spec.db_max_connections', 'resource_spec.db_max_connections must be at least 1.');
  }
  const redisMemoryMb = read.number('redis_memory_mb') ?? BACKING_DEFAULTS.redis_memory_mb;
  if (redisMemoryMb < 1) throw new ManifestError('resource_spec.redis_memory_mb', 'resource_spec.redis_memory_mb must be at least 1.');
  return {
    apiServer,
    queue,
    database: {
      compute: compute(read, 'db_', read.number('db_cpu') ?? BACKING_DEFAULTS.db_cpu, read.number('db_memory_mb') ?? BACKING_DEFAULTS.db_memory_mb),
      storageGi,
      maxConnections: maxConnections ?? null,
    },
    redis: {
      memoryMb: redisMemoryMb,
      // Redis is told to stay within the request (--maxmemory); the limit leaves room for its own overhead.
      compute: {
        requests: { cpu: cpuQuantity(BACKING_DEFAULTS.redis_cpu), memory: memoryQuantity(redisMemoryMb) },
        limits: { memory: memoryQuantity(redisMemoryMb * 2) },
      },
    },
  };
}

/** Kubernetes CPU quantity in millicores ("500m"). */
export function cpuQuantity(cpu: number): string {
  return `${Math.round(cpu * 1000)}m`;
}

/** The API's megabytes are read as mebibytes, as Kubernetes users write them ("512Mi"). */
export function memoryQuantity(megabytes: number): string {
  return `${Math.round(megabytes)}Mi`;
}

export function storageQuantity(gibibytes: number): string {
  return Number.isInteger(gibibytes) ? `${gibibytes}Gi` : `${Math.ceil(gibibytes * 1024)}Mi`;
}

type Reader = ReturnType<typeof reader>;

function reader(spec: ResourceSpec) {
  const number = (field: string): number | undefined => {
    const value = spec[field];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new ManifestError(`resource_spec.${field}`, `resource_spec.${field} must be a number of at least 0, not ${JSON.stringify(value)}.`);
    }
    return value;
  };
  const integer = (field: string): number | undefined => {
    const value = number(field);
    if (value !== undefined && !Number.isInteger(value)) {
      throw new ManifestError(`resource_spec.${field}`, `resource_spec.${field} must be a whole number, not ${value}.`);
    }
    return value;
  };
  return { number, integer };
}

function scale(read: Reader, minField: string, maxField: string, defaultMin: number, defaultMax: number): Scale {
  const min = read.integer(minField) ?? defaultMin;
  const max = read.integer(maxField) ?? Math.max(defaultMax, min);
  if (min > max) {
    throw new ManifestError(`resource_spec.${minField}`, `resource_spec.${minField} (${min}) is greater than resource_spec.${maxField} (${max}).`);
  }
  // An HPA cannot scale below one replica (scaling to zero needs a feature gate or KEDA).
  return { min, max: Math.max(max, min) };
}

/** Requests from `<prefix>cpu`/`<prefix>memory_mb`; limits from the `_limit` fields, else twice the requests (as the API documents). */
function compute(read: Reader, prefix: string, cpu: number, memoryMb: number): Compute {
  const cpuLimit = read.number(`${prefix}cpu_limit`) ?? cpu * 2;
  const memoryLimitMb = read.number(`${prefix}memory_limit_mb`) ?? memoryMb * 2;
  if (cpu > 0 && cpuLimit > 0 && cpuLimit < cpu) {
    throw new ManifestError(
      `resource_spec.${prefix}cpu_limit`,
      `resource_spec.${prefix}cpu_limit (${cpuLimit}) is below resource_spec.${prefix}cpu (${cpu}); a limit must be at least the request.`,
    );
  }
  if (memoryMb > 0 && memoryLimitMb > 0 && memoryLimitMb < memoryMb) {
    throw new ManifestError(
      `resource_spec.${prefix}memory_limit_mb`,
      `resource_spec.${prefix}memory_limit_mb (${memoryLimitMb}) is below resource_spec.${prefix}memory_mb (${memoryMb}); a limit must be at least the request.`,
    );
  }
  if (cpu > 0 && Math.round(cpu * 1000) === 0) {
    throw new ManifestError(`resource_spec.${prefix}cpu`, `resource_spec.${prefix}cpu (${cpu}) is below the smallest CPU Kubernetes can request (0.001).`);
  }
  // Zero means "not set": Kubernetes reads a missing request as "as much as the limit" and a missing limit as "no limit".
  return {
    requests: { ...(cpu > 0 ? { cpu: cpuQuantity(cpu) } : {}), ...(memoryMb > 0 ? { memory: memoryQuantity(memoryMb) } : {}) },
    limits: {
      ...(cpuLimit > 0 ? { cpu: cpuQuantity(cpuLimit) } : {}),
      ...(memoryLimitMb > 0 ? { memory: memoryQuantity(memoryLimitMb) } : {}),
    },
  };
}
