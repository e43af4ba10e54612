// The session image builds the data bridge and the agent in its `extensions` stage from the files it
// copies in. Both bundle source from outside their folders (the bridge's wire, server/src/model), so
// the stage must copy every source file their bundles read, or the image's build fails where no
// container engine runs the tests. esbuild's metafile lists what each bundle reads.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DockerfileParser } from 'dockerfile-ast';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DOCKERFILE = 'images/session-base/Dockerfile';
/** The entry points of `npm run package` of the extension and of the agent. */
const ENTRY_POINTS = [
  'extension/src/extension.ts',
  'extension/src/process.ts',
  'agent/src/cli/index.ts',
  'agent/src/vscode/extension.ts',
];

/** The sources of the COPY instructions (without --from) of the stage named `stage`. */
function copiedSources(stage: string): string[] {
  const sources: string[] = [];
  let current: string | undefined;
  for (const instruction of DockerfileParser.parse(
    readFileSync(path.join(root, DOCKERFILE), 'utf8'),
  ).getInstructions()) {
    const keyword = instruction.getKeyword();
    const args = instruction.getTextContent().slice(keyword.length).trim().split(/\s+/);
    if (keyword === 'FROM') current = args[2];
    else if (keyword === 'COPY' && current === stage && !args.some((a) => a.startsWith('--from='))) {
      sources.push(...args.slice(0, -1));
    }
  }
  return sources;
}

/** The repository's own source files (not node_modules) that the bundle of `entry` reads. */
async function bundleSources(entry: string): Promise<string[]> {
  const result = await build({
    entryPoints: [path.join(root, entry)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    external: ['vscode'],
    write: false,
    metafile: true,
    logLevel: 'silent',
    absWorkingDir: root,
  });
  return Object.keys(result.metafile.inputs).filter((input) => !input.split('/').includes('node_modules'));
}

describe(`${DOCKERFILE}: the extensions stage`, () => {
  it('copies every source file the bridge and agent bundles read', async () => {
    const copied = copiedSources('extensions');
    assert.ok(copied.length > 0, 'the stage copies nothing');
    const covered = (file: string) =>
      copied.some((source) => (source.endsWith('/') ? file.startsWith(source) : file === source));
    const sources = new Set((await Promise.all(ENTRY_POINTS.map(bundleSources))).flat());
    assert.ok(sources.has('server/src/model/data-bridge.ts'), [...sources].join(' '));
    assert.deepEqual(
      [...sources].filter((file) => !covered(file)),
      [],
      'read by a bundle but not copied into the stage',
    );
  });
});
