import fs from 'node:fs';
import path from 'node:path';

export interface NextSteps {
  api: string;
  /** The dashboard, signed in with an API key. */
  dashboard: string;
  docs: string;
  /** The admin key Berth generated on first start, when that file is still there. */
  keyFile?: string;
}

/** Where a person who just ran `npm start` goes next, as log fields and as a banner. */
export function whereToGoNext(address: string, dataDir: string): NextSteps {
  const api = address.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//127.0.0.1:');
  const keyFile = path.join(dataDir, 'bootstrap-api-key');
  return { api, dashboard: `${api}/`, docs: `${api}/docs`, ...(fs.existsSync(keyFile) ? { keyFile: path.resolve(keyFile) } : {}) };
}

export function readyBanner(next: NextSteps): string {
  const key = next.keyFile ? `$(cat ${next.keyFile})` : '<your API key>';
  return [
    '',
    `  Berth is ready at ${next.api}`,
    `  Dashboard:      ${next.dashboard}  (sign in with an API key)`,
    `  API reference:  ${next.docs}`,
    ...(next.keyFile ? [`  Admin key:      ${next.keyFile}`] : []),
    `  Try it:         curl -H "X-Api-Key: ${key}" ${next.api}/v2/deployments`,
    `  The CLI:        BERTH_API_KEY=${key} npx berth login --url ${next.api}`,
    '',
    '',
  ].join('\n');
}
