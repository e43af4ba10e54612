// Mocha loads a test file with require() where it can and with import() where it must (top-level
// await), so a support module may be loaded twice in one run, once per module system, each with its
// own module state. What must be one per process (the control plane, the real node, the teardown's
// list, the lane) is kept here, on globalThis.
export function processWide<T>(key: string, init: () => T): T {
  const store = globalThis as unknown as Record<symbol, T | undefined>;
  const symbol = Symbol.for(`ide-cloud.test.${key}`);
  return (store[symbol] ??= init());
}

/**
 * This run's lane of scripts/test/lanes.ts, if it is one: read once per process and taken out of the
 * environment, so a mocha run a test starts is none.
 */
export const lane: string | undefined = processWide('lane', () => {
  const value = process.env.IDE_CLOUD_TEST_LANE;
  delete process.env.IDE_CLOUD_TEST_LANE;
  return { value };
}).value;
