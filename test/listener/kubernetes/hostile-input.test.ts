import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { ResourceSpec } from '../../../src/domain/deployment-config.js';
import type { DesiredDeployment } from '../../../src/agent/kubernetes/manifests.js';
import { renderDeployment } from '../../../src/agent/kubernetes/manifests.js';
import { kubernetesNames } from '../../../src/agent/kubernetes/names.js';
import { ManifestError } from '../../../src/agent/kubernetes/syntax.js';
import { DEPLOYMENT_ID, desired, renderSpec, renderValid } from './fixtures.js';

/** Refused with a ManifestError naming the field, never rendered into something Kubernetes would refuse. */
function refused(input: DesiredDeployment, field: string, message: RegExp): void {
  assert.throws(
    () => renderDeployment(input),
    (error: unknown) => {
      assert.ok(error instanceof ManifestError, `expected a ManifestError, got ${String(error)}`);
      assert.equal(error.field, field);
      assert.match(error.message, message);
      return true;
    },
  );
}

const spec = (resourceSpec: ResourceSpec) => desired({ resourceSpec });

describe('names', () => {
  test('are stable: the same deployment always gets the same names', () => {
    assert.deepEqual(kubernetesNames('support-agent', DEPLOYMENT_ID), kubernetesNames('support-agent', DEPLOYMENT_ID));
    assert.deepEqual(
      renderValid(desired()).map((o) => o.metadata?.name),
      renderValid(desired({ revisionId: '5b6c7d8e-3333-4333-8333-333333333333' })).map((o) => o.metadata?.name),
    );
  });

  test('differ for deployments whose names differ only in case or share a name', () => {
    assert.notEqual(kubernetesNames('Agent', DEPLOYMENT_ID).base, kubernetesNames('agent', '00000000-0000-4000-8000-000000000001').base);
  });

  test("are valid DNS labels for any deployment name, short enough for a StatefulSet's pod labels", () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.uuid(), (name, id) => {
        for (const value of Object.values(kubernetesNames(name, id))) {
          assert.match(value, /^[a-z]([-a-z0-9]*[a-z0-9])?$/, `name ${JSON.stringify(name)} gave ${value}`);
          assert.ok(value.length <= 52, `${value} is ${value.length} characters`);
        }
      }),
    );
  });
});

describe('hostile labels and annotations are refused with a clear error', () => {
  const badKeys: [string, RegExp][] = [
    ['has space', /letters, digits/],
    ['', /1 to 63 characters/],
    ['-leading-dash', /start and end with a letter or digit/],
    ['x'.repeat(64), /1 to 63 characters/],
    ['UPPER.example.com/team', /prefix .* lowercase DNS subdomain/],
    ['a/b/c', /prefix .* DNS subdomain/],
    ['example.com/', /1 to 63 characters/],
    ['ünïcode', /letters, digits/],
  ];
  for (const [key, message] of badKeys) {
    test(`label key ${JSON.stringify(key)}`, () => refused(spec({ labels: { [key]: 'v' } }), `resource_spec.labels[${JSON.stringify(key)}]`, message));
  }

  const badValues = ['has space', 'x'.repeat(64), '-dash-first', 'dot-last.', 'tab\there', 'ünïcode', 'a/b'];
  for (const value of badValues) {
    test(`label value ${JSON.stringify(value)}`, () => refused(spec({ labels: { team: value } }), 'resource_spec.labels["team"]', /value Kubernetes refuses/));
  }

  test('a label key Berth selects on', () => {
    refused(spec({ labels: { 'app.kubernetes.io/component': 'x' } }), 'resource_spec.labels["app.kubernetes.io/component"]', /set by Berth/);
    refused(spec({ labels: { 'berth.dev/anything': 'x' } }), 'resource_spec.labels["berth.dev/anything"]', /set by Berth/);
  });

  test('an annotation key Kubernetes refuses, and annotations over 256 KiB', () => {
    refused(spec({ annotations: { 'not a key': 'v' } }), 'resource_spec.annotations["not a key"]', /not valid in Kubernetes/);
    refused(spec({ annotations: { big: 'x'.repeat(300 * 1024) } }), 'resource_spec.annotations', /at most 262144/);
  });

  test('a value that is not a string', () => {
    refused(spec({ labels: { team: 5 } }), 'resource_spec.labels["team"]', /must be a string/);
  });

  test('annotation values may hold any text', () => {
    renderSpec({ annotations: { 'example.com/note': 'Any text: spaces, ünïcode, "quotes" and\nnew lines.' } });
  });

  test('a deployment or revision id that is no label value', () => {
    refused(desired({ deploymentId: 'not a label value' }), 'deploymentId', /cannot be a Kubernetes label value/);
    refused(desired({ revisionId: 'r'.repeat(64) }), 'revisionId', /at most 63 characters/);
  });
});

describe('other hostile input is refused with a clear error', () => {
  const cases: [string, DesiredDeployment, string, RegExp][] = [
    ['a namespace that is no DNS label', desired({ namespace: 'Team_A' }), 'namespace', /must be a DNS label/],
    ['an image with spaces', desired({ image: 'evil image; rm -rf /' }), 'image', /without spaces/],
    ['an environment name with "="', desired({ env: { 'A=B': 'x' } }), 'env.A=B', /not an environment variable name/],
    ['an unknown pull policy', desired({ imagePullPolicy: 'Sometimes' as 'Always' }), 'imagePullPolicy', /one of Always, IfNotPresent, Never/],
    ['a negative size', spec({ cpu: -1 }), 'resource_spec.cpu', /at least 0/],
    ['a size that is not a number', spec({ memory_mb: '2Gi' }), 'resource_spec.memory_mb', /must be a number/],
    ['a fractional replica count', spec({ min_scale: 1.5 }), 'resource_spec.min_scale', /whole number/],
    ['min_scale over max_scale', spec({ min_scale: 3, max_scale: 2 }), 'resource_spec.min_scale', /greater than resource_spec.max_scale/],
    ['a limit below its request', spec({ cpu: 2, cpu_limit: 1 }), 'resource_spec.cpu_limit', /a limit must be at least the request/],
    [
      'a database memory limit below its request',
      spec({ db_memory_mb: 2048, db_memory_limit_mb: 1024 }),
      'resource_spec.db_memory_limit_mb',
      /at least the request/,
    ],
    ['a CPU too small to request', spec({ cpu: 0.0001 }), 'resource_spec.cpu', /smallest CPU/],
    ['autoscaling without a CPU request', spec({ cpu: 0, max_scale: 3 }), 'resource_spec.cpu', /needs resource_spec.cpu greater than 0/],
    ['zero database storage', spec({ db_storage_gi: 0 }), 'resource_spec.db_storage_gi', /greater than 0/],
    ['an invalid service account', spec({ service_account_name: 'Robot!' }), 'resource_spec.service_account_name', /DNS subdomain/],
    [
      'a pull secret with an unknown field',
      spec({ image_pull_secrets: [{ name: 'x', namespace: 'y' }] }),
      'resource_spec.image_pull_secrets[0].namespace',
      /does not pass on/,
    ],
    [
      'a volume with two sources',
      spec({ volumes: [{ name: 'v', emptyDir: {}, secret: { secretName: 's' } }] }),
      'resource_spec.volumes[0]',
      /exactly one source/,
    ],
    ['a hostPath volume', spec({ volumes: [{ name: 'v', hostPath: { path: '/' } }] }), 'resource_spec.volumes[0].hostPath', /does not pass on/],
    [
      'two volumes of one name',
      spec({
        volumes: [
          { name: 'v', emptyDir: {} },
          { name: 'v', emptyDir: {} },
        ],
      }),
      'resource_spec.volumes',
      /named "v"/,
    ],
    ['a mount of an undefined volume', spec({ volume_mounts: [{ name: 'ghost', mountPath: '/x' }] }), 'resource_spec.volume_mounts[0].name', /does not define/],
    ['a sidecar without an image', spec({ sidecars: [{ name: 'proxy' }] }), 'resource_spec.sidecars[0].image', /required/],
    [
      'a sidecar with a field Berth does not pass on',
      spec({ sidecars: [{ name: 'p', image: 'i', ports: [] }] }),
      'resource_spec.sidecars[0].ports',
      /does not pass on/,
    ],
    ["a sidecar named like Berth's container", spec({ sidecars: [{ name: 'api-server', image: 'i' }] }), 'resource_spec', /Berth names its own containers so/],
    [
      'a restart policy on a sidecar',
      spec({ sidecars: [{ name: 'p', image: 'i', restartPolicy: 'Always' }] }),
      'resource_spec.sidecars[0].restartPolicy',
      /only on init_containers/,
    ],
    [
      'an init container env entry with a bad name',
      spec({ init_containers: [{ name: 'i', image: 'i', env: [{ name: '1X', value: 'v' }] }] }),
      'resource_spec.init_containers[0].env[0].name',
      /not an environment variable name/,
    ],
    ['an environment over 1 MB', desired({ env: { BIG: 'x'.repeat(1_100_000) } }), 'env', /at most about 1 MB/],
    ['an empty POSTGRES_URI_CUSTOM', desired({ env: { POSTGRES_URI_CUSTOM: '' } }), 'env.POSTGRES_URI_CUSTOM', /is empty/],
  ];
  for (const [name, input, field, message] of cases) {
    test(name, () => refused(input, field, message));
  }

  test('an init container may be a native sidecar (restartPolicy Always)', () => {
    renderSpec({ init_containers: [{ name: 'proxy', image: 'envoyproxy/envoy:v1.30', restartPolicy: 'Always' }] });
  });
});

test('any mix of numeric resource_spec values either renders valid objects or is refused with a ManifestError', () => {
  const fields = [
    'min_scale',
    'max_scale',
    'cpu',
    'cpu_limit',
    'memory_mb',
    'memory_limit_mb',
    'queue_min_scale',
    'queue_max_scale',
    'queue_cpu',
    'queue_memory_mb',
    'redis_memory_mb',
    'db_cpu',
    'db_memory_mb',
    'db_storage_gi',
    'db_max_connections',
  ];
  const value = fc.oneof(fc.integer({ min: -2, max: 64 }), fc.double({ min: 0, max: 64, noNaN: true }), fc.constant(null));
  fc.assert(
    fc.property(fc.dictionary(fc.constantFrom(...fields), value, { maxKeys: 8 }), (resourceSpec) => {
      try {
        renderSpec(resourceSpec);
      } catch (error) {
        if (!(error instanceof ManifestError)) throw error;
      }
    }),
    { numRuns: 200 },
  );
});
