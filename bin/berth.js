#!/usr/bin/env node
// Loads the TypeScript sources through tsx in this same process, so a checkout needs no
// build step and signals reach the server directly.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
