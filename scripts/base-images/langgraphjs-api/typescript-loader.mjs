// Preloaded by the image's entrypoint (`node --import /api/typescript-loader.mjs ...`) so
// graphs written in TypeScript (.ts, .mts, .cts) load as they do under the LangGraph.js dev
// server: tsx's ESM and CommonJS hooks, registered before the entrypoint runs. Registering
// them from inside the entrypoint instead is not the same: a .ts file of a project without
// "type": "module" then loads as CommonJS with no named exports, and its graph is not found.
//
// Not needed when every graph was compiled at image build (prebuilt.mjs): tsx's hooks would
// then only slow down loading the server's own modules.
import { prebuilt } from './prebuilt.mjs';

if ('why' in prebuilt) await import('tsx');
