import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The JavaScript agent-server base image that tests and benches build agents on, named as
 * BERTH_BASE_IMAGE_NODE names it (no tag). BERTH_TEST_BASE_IMAGE_NODE tries a changed base
 * image under another name, leaving the one other runs on this machine use as it is.
 */
export const TEST_BASE_IMAGE_NODE = process.env.BERTH_TEST_BASE_IMAGE_NODE || 'localhost/berth/langgraphjs-api';

/** `bash` arguments that build (or find up to date) TEST_BASE_IMAGE_NODE for the fixtures' Node.js 20. */
export const BUILD_TEST_BASE_IMAGE = [path.join(ROOT, 'scripts/build-base-images.sh'), '--tag', `${TEST_BASE_IMAGE_NODE}:20`];
