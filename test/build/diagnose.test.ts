import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { explainBuildFailure } from '../../src/image-builds/diagnose.js';

// Output shapes of real failures (buildah, docker with BuildKit, docker's classic builder, npm 11).
describe('explaining a failed build', () => {
  test('npm ci on a lock file that lacks optional platform packages names the install_command override', () => {
    const message = explainBuildFailure(
      [
        'STEP 4/7: RUN npm ci',
        'npm error `npm ci` can only install packages when your package.json and package-lock.json or npm-shrinkwrap.json are in sync. Please update your lock file with `npm install` before continuing.',
        'npm error Missing: @tailwindcss/oxide-darwin-arm64@ from lock file',
        'npm error Missing: @tailwindcss/oxide-win32-x64-msvc@ from lock file',
        'Error: building at STEP "RUN npm ci": exit status 1',
      ],
      1,
    );
    assert.match(
      message,
      /^The image build failed at `RUN npm ci` \(exit code 1\): npm ci refused the lock file because it lacks optional platform packages \(@tailwindcss\/oxide-darwin-arm64, @tailwindcss\/oxide-win32-x64-msvc\)/,
    );
    assert.match(message, /Set source_config\.install_command to "npm install"/);
  });

  test('a lock file that is merely stale says to commit an updated one', () => {
    const message = explainBuildFailure(
      [
        '#8 0.911 npm error `npm ci` can only install packages when your package.json and package-lock.json or npm-shrinkwrap.json are in sync.',
        '#8 0.912 npm error Missing: left-pad@1.3.0 from lock file',
        'ERROR: failed to solve: process "/bin/sh -c npm ci" did not complete successfully: exit code: 1',
      ],
      1,
    );
    assert.match(
      message,
      /^The image build failed at `RUN npm ci` \(exit code 1\): npm ci refused the lock file because package-lock\.json does not match package\.json \(missing: left-pad\)\. Run `npm install` and commit/,
    );
  });

  test('a dependency the registry does not have, a version that does not exist, an unreachable registry', () => {
    const failedAt = 'Error: building at STEP "RUN npm install": exit status 1';
    assert.match(
      explainBuildFailure(
        [
          'npm error code E404',
          'npm error 404 Not Found - GET https://registry.npmjs.org/@acme%2fagent-tools - Not found',
          "npm error 404  '@acme/agent-tools@^2.0.0' is not in this registry.",
          failedAt,
        ],
        1,
      ),
      /: the dependency @acme\/agent-tools is not in the npm registry this build can reach\./,
    );
    assert.match(
      explainBuildFailure(['npm error code ETARGET', 'npm error notarget No matching version found for zod@^99.0.0.', failedAt], 1),
      /: no published version matches zod@\^99\.0\.0\. Change the version range/,
    );
    assert.match(
      explainBuildFailure(
        [
          'npm error code ENOTFOUND',
          'npm error network request to https://registry.npmjs.org/zod failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org',
          failedAt,
        ],
        1,
      ),
      /: npm could not reach the package registry from inside the build \(ENOTFOUND\)/,
    );
  });

  test('an unknown failure quotes the step and its last output lines, without the builder chatter', () => {
    const message = explainBuildFailure(
      ['STEP 3/3: RUN make', 'cc -o agent agent.c', 'agent.c:3: error: expected ;', "The command '/bin/sh -c make' returned a non-zero code: 2"],
      1,
    );
    assert.equal(
      message,
      'The image build failed at `RUN make` (exit code 2). Last output: cc -o agent agent.c | agent.c:3: error: expected ; The build log has the whole output.',
    );
  });

  test('BuildKit output: the step output without its "#<step> <seconds>" prefix', () => {
    const message = explainBuildFailure(
      [
        '#7 [3/3] RUN ./check.sh',
        '#7 0.311 checking graphs',
        '#7 0.402 graph agent is broken',
        '#7 ERROR: process "/bin/sh -c ./check.sh" did not complete successfully: exit code: 3',
        'ERROR: failed to solve: process "/bin/sh -c ./check.sh" did not complete successfully: exit code: 3',
      ],
      1,
    );
    assert.equal(
      message,
      'The image build failed at `RUN ./check.sh` (exit code 3). Last output: checking graphs | graph agent is broken The build log has the whole output.',
    );
  });

  test('a missing command in a RUN step says what the base image has', () => {
    const message = explainBuildFailure(
      [
        'STEP 4/7: RUN yarn install --frozen-lockfile',
        '/bin/sh: yarn: not found',
        'Error: building at STEP "RUN yarn install --frozen-lockfile": exit status 127',
      ],
      127,
    );
    assert.match(message, /: the command yarn is not in the base image\. The JavaScript base image has node, npm, npx, tsx and busybox's tools/);
  });
});
