import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { CLIENT_FILES, clientFiles, liveOpenApiDocument } from '../../scripts/generate-client.js';

test('the checked-in client (src/client/openapi.json and schema.ts) is generated from the document the server serves now', async () => {
  const expected = await clientFiles(await liveOpenApiDocument());
  const stale = 'is stale: run `npm run generate:client` and commit the result';
  assert.equal(fs.readFileSync(CLIENT_FILES.document, 'utf8'), expected.document, `src/client/openapi.json ${stale}`);
  assert.equal(fs.readFileSync(CLIENT_FILES.schema, 'utf8'), expected.schema, `src/client/schema.ts ${stale}`);
});
