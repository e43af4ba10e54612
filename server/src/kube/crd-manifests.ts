import { fileURLToPath } from 'node:url';
import path from 'node:path';
import YAML from 'yaml';
import { buildCrds } from '../model/crd.js';

/** Where the generated CRDs live: the Helm chart's crds/ folder, from which Helm installs them. */
export const CRD_DIR = path.resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../charts/ide-cloud/crds');

const HEADER = '# Generated from server/src/model by `npm run crds`. Do not edit.\n';

export function crdManifests(): { file: string; text: string }[] {
  return buildCrds().map((crd) => {
    const name = (crd.metadata as { name: string }).name;
    return { file: path.join(CRD_DIR, `${name}.yaml`), text: HEADER + YAML.stringify(crd) };
  });
}
