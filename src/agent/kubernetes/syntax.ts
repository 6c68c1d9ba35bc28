/**
 * Kubernetes' own syntax rules for names, label keys and label values, checked before
 * anything is rendered: an object Kubernetes would refuse is refused here instead, with a
 * message naming the field a person has to change.
 */

/** What a rendered object cannot carry, and which input field to change. */
export class ManifestError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'ManifestError';
  }
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
/** Kubernetes accepts more in env names, but LangGraph servers and shells read only these. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function isDnsLabel(value: string): boolean {
  return value.length <= 63 && DNS_LABEL.test(value);
}

export function isDnsSubdomain(value: string): boolean {
  return value.length <= 253 && DNS_SUBDOMAIN.test(value);
}

/** A label or annotation key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
export function labelKeyProblem(key: string): string | null {
  const slash = key.lastIndexOf('/');
  const prefix = slash === -1 ? null : key.slice(0, slash);
  const name = slash === -1 ? key : key.slice(slash + 1);
  if (prefix !== null && !isDnsSubdomain(prefix)) {
    return 'its prefix (before "/") must be a lowercase DNS subdomain of at most 253 characters';
  }
  if (name.length === 0 || name.length > 63) return 'its name (after any "/" prefix) must have 1 to 63 characters';
  if (!QUALIFIED_NAME.test(name)) {
    return 'its name must start and end with a letter or digit and contain only letters, digits, "-", "_" and "."';
  }
  return null;
}

export function labelValueProblem(value: string): string | null {
  if (value.length > 63) return 'a label value has at most 63 characters';
  if (!LABEL_VALUE.test(value)) {
    return 'a label value is empty or starts and ends with a letter or digit, with only letters, digits, "-", "_" and "." between';
  }
  return null;
}

export function assertLabelValue(field: string, value: string): void {
  const problem = labelValueProblem(value);
  if (problem) throw new ManifestError(field, `${field} (${JSON.stringify(value)}) cannot be a Kubernetes label value: ${problem}.`);
}

export function assertDnsLabel(field: string, value: string): void {
  if (!isDnsLabel(value)) {
    throw new ManifestError(
      field,
      `${field} (${JSON.stringify(value)}) must be a DNS label: at most 63 lowercase letters, digits and "-", starting and ending with a letter or digit.`,
    );
  }
}

export function assertDnsSubdomain(field: string, value: string): void {
  if (!isDnsSubdomain(value)) {
    throw new ManifestError(
      field,
      `${field} (${JSON.stringify(value)}) must be a DNS subdomain: at most 253 lowercase letters, digits, "-" and ".", starting and ending with a letter or digit.`,
    );
  }
}

export function assertEnvName(field: string, name: string): void {
  if (!ENV_NAME.test(name)) {
    throw new ManifestError(
      field,
      `${field} (${JSON.stringify(name)}) is not an environment variable name: use letters, digits and "_", not starting with a digit.`,
    );
  }
}
