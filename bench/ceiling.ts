/**
 * The ceiling: a bare `node:http` server answering Berth's paths with fixed bodies of the
 * same shape and size as Berth's answers (one deployment, a page of 20). No routing
 * library, no validation, no database: what this machine can do for the same load.
 * Prints `{"port": N}` once listening.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const deployment = {
  id: '2f0a9b57-3f0c-4b4e-9d61-6a7f1f3c2e11',
  tenant_id: '8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
  name: 'billing-agent-004242',
  display_name: null,
  source: 'external_docker',
  source_config: {
    integration_id: null,
    repo_url: null,
    deployment_type: 'prod',
    build_on_push: null,
    custom_url: null,
    listener_id: null,
    listener_config: null,
    install_command: null,
    build_command: null,
    build_timeout_seconds: null,
    deploy_timeout_seconds: null,
    resource_spec: { min_scale: 1, max_scale: 1, cpu: 0.5, memory_mb: 512 },
  },
  source_revision_config: {
    repo_ref: null,
    graph_config_path: null,
    image_uri: 'registry.example.com/billing/billing-agent-004242:v43',
    repo_commit_sha: null,
    tracked_packages: null,
    langgraph_config_path: null,
  },
  secrets: [
    { name: 'OPENAI_API_KEY', value: 'sk-0123456789abcdefghijklmnopqrstuvwxyzABCD' },
    { name: 'DATABASE_URL', value: 'postgres://app:0123456789abcdef01234567@db.internal/billing' },
  ],
  status: 'READY',
  latest_revision_id: '5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e',
  active_revision_id: '5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e',
  image_version: null,
  url: 'http://127.0.0.1:24242',
  remote_reconciled: false,
  created_at: '2025-09-12T10:31:07.123Z',
  updated_at: '2025-09-12T10:31:47.123Z',
};

const one = Buffer.from(JSON.stringify(deployment));
const page = Buffer.from(JSON.stringify({ resources: Array.from({ length: 20 }, () => deployment), offset: 20 }));
const ok = Buffer.from(JSON.stringify({ ok: true }));

function send(res: http.ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
}

const server = http.createServer((req, res) => {
  const path = req.url ?? '/';
  // Bodies are read to the end, as any server must before answering.
  req.resume();
  req.on('end', () => {
    if (path === '/ok') return send(res, 200, ok);
    if (path.startsWith('/v2/deployments')) {
      if (req.method === 'POST') return send(res, 201, one);
      if (req.method === 'PATCH') return send(res, 200, one);
      if (path === '/v2/deployments' || path.startsWith('/v2/deployments?')) return send(res, 200, page);
      return send(res, 200, one);
    }
    send(res, 404, Buffer.from('{"detail":"Not Found"}'));
  });
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
