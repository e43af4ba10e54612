// One work folder across what ships: the session images clone into and open WORKSPACE_DIR, and every
// shipped app definition mounts its workspace claim at the same folder (its mountPath, else the
// operator's default, which must be the images' own).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DockerfileParser } from 'dockerfile-ast';
import YAML from 'yaml';
import { DEFAULT_WORK_FOLDER, workFolder } from '../../server/src/model/app-definition.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

/** The WORKSPACE_DIR an image's Dockerfile sets in its last stage, if any. */
function imageWorkFolder(file: string): string | undefined {
  let value: string | undefined;
  for (const instruction of DockerfileParser.parse(read(file)).getInstructions()) {
    if (instruction.getKeyword() === 'FROM') value = undefined;
    if (instruction.getKeyword() !== 'ENV') continue;
    const match = /(?:^|\s)WORKSPACE_DIR=(\S+)/.exec(instruction.getTextContent());
    if (match) value = match[1];
  }
  return value;
}

describe('the work folder of what ships', () => {
  const base = imageWorkFolder('images/session-base/Dockerfile');

  it("the session base image sets WORKSPACE_DIR to the operator's default, and its entrypoint falls back to it", () => {
    assert.equal(base, DEFAULT_WORK_FOLDER);
    const entrypoint = read('images/session-base/entrypoint.sh');
    assert.match(entrypoint, /WORKSPACE_DIR="\$\{WORKSPACE_DIR:-([^}]+)\}"/);
    assert.equal(/WORKSPACE_DIR="\$\{WORKSPACE_DIR:-([^}]+)\}"/.exec(entrypoint)![1], DEFAULT_WORK_FOLDER);
    // The clone and the IDE both take the folder from the variable, nothing else: the IDE's page opens
    // the folder the first-screen script is given (code-server itself only when that script failed).
    assert.match(entrypoint, /bootstrap --dir "\$WORKSPACE_DIR"/);
    assert.match(entrypoint, /--work-folder "\$WORKSPACE_DIR"/);
    assert.match(entrypoint, /IDE_FOLDER="\$WORKSPACE_DIR"/);
    assert.match(entrypoint, /\n\s+--ignore-last-opened \\\n\s+\$\{IDE_FOLDER:\+"\$IDE_FOLDER"\}\n*$/);
  });

  it('no session image built on the base moves the folder', () => {
    assert.equal(imageWorkFolder('images/session/Dockerfile'), undefined);
  });

  it("every shipped app definition mounts its workspace at its image's work folder", () => {
    const values = YAML.parse(read('charts/ide-cloud/values.yaml')) as {
      appDefinitions: {
        defaults: Record<string, unknown>;
        apps: Record<string, { image: string; mountPath?: string }>;
      };
    };
    const images = Object.keys(JSON.parse(read('images/session/images.json')) as Record<string, string>);
    const apps = Object.entries(values.appDefinitions.apps);
    assert.ok(apps.length > 0);
    for (const [name, app] of apps) {
      const spec = { ...values.appDefinitions.defaults, ...app } as { image: string; mountPath?: string };
      assert.ok(images.includes(spec.image.replace(/^ide-cloud\//, '').replace(/:.*$/, '')), `${name}: ${spec.image}`);
      assert.equal(workFolder(spec), base, name);
    }
  });
});
