// Writes the CRD manifests generated from server/src/model into the Helm chart. `--check` fails
// when the committed files differ from what the schemas generate (the test suite runs the same check).
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { crdManifests, CRD_DIR } from '../server/src/kube/crd-manifests.js';

const check = process.argv.includes('--check');
await mkdir(CRD_DIR, { recursive: true });
let stale = 0;
for (const { file, text } of crdManifests()) {
  const current = await readFile(file, 'utf8').catch(() => '');
  if (current === text) continue;
  if (check) {
    console.error(`out of date: ${file} (run npm run crds)`);
    stale++;
  } else {
    await writeFile(file, text);
    console.log(`wrote ${file}`);
  }
}
process.exitCode = stale > 0 ? 1 : 0;
