// Builds the agent's two fronts with esbuild: dist/cli.mjs (ESM, for the `ide-cloud-agent` bin) and
// dist/extension.cjs (CJS, what VS Code loads); with --vsix also packages dist/ide-cloud-agent.vsix.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';

const agentDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const VSIX_PATH = path.join(agentDir, 'dist', 'ide-cloud-agent.vsix');
export const CLI_PATH = path.join(agentDir, 'dist', 'cli.mjs');

export async function buildAgent(options: { vsix?: boolean } = {}): Promise<void> {
  const common = { bundle: true, platform: 'node', target: 'node20', logLevel: 'warning', sourcemap: false } as const;
  await build({
    ...common,
    entryPoints: [path.join(agentDir, 'src/cli/index.ts')],
    format: 'esm',
    outfile: CLI_PATH,
  });
  await build({
    ...common,
    entryPoints: [path.join(agentDir, 'src/vscode/extension.ts')],
    format: 'cjs',
    external: ['vscode'],
    outfile: path.join(agentDir, 'dist', 'extension.cjs'),
  });
  if (options.vsix) {
    const vsce = path.join(agentDir, '..', 'node_modules', '@vscode', 'vsce', 'vsce');
    await promisify(execFile)(
      process.execPath,
      [vsce, 'package', '--no-dependencies', '--allow-missing-repository', '--out', VSIX_PATH],
      { cwd: agentDir },
    );
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildAgent({ vsix: process.argv.includes('--vsix') });
}
