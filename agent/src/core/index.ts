// The agent's core: no IDE dependency; the CLI and the VS Code extension are thin fronts over it.
export * from './keys.js';
export * from './errors.js';
export * from './redact.js';
export * from './log.js';
export * from './git.js';
export * from './clone.js';
export * from './templates.js';
export * from './platform.js';
export * from './participation.js';
export * from './lock.js';
export * from './bootstrap.js';
export * from './values/environment.js';
export * from './values/data-bridge.js';
export * from './values/strategy.js';
export * from './values/bridge-process.js';
export * from './credentials.js';
export * from './save.js';
