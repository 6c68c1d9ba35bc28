import { type Config, loadConfig } from '../../src/config.js';

/**
 * A configuration read the way Berth reads it (every default and check of config.ts),
 * from the given environment, with fields the test decides itself on top: fixtures do not
 * break each time a setting is added.
 */
// Standby containers off: tests that replace revisions remove what they started (standby.test.ts asks for them).
export function testConfig(env: Record<string, string>, overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({ LOG_LEVEL: 'silent', BERTH_STANDBY_SECONDS: '0', ...env }), ...overrides };
}
