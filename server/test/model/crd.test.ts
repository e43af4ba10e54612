import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { buildCrds } from '../../src/model/crd.js';
import { crdManifests } from '../../src/kube/crd-manifests.js';

describe('CRDs generated from the zod schemas', () => {
  it('match the committed chart files (run `npm run crds` after a schema change)', async () => {
    for (const { file, text } of crdManifests()) {
      assert.equal(await readFile(file, 'utf8'), text, `${file} is out of date`);
    }
  });

  it('are structural: no additionalProperties:false, no JSON-Schema-only keywords', () => {
    const text = JSON.stringify(buildCrds());
    for (const forbidden of ['"additionalProperties":false', '"$schema"', '"propertyNames"', '"anyOf"', '"$ref"']) {
      assert.equal(text.includes(forbidden), false, forbidden);
    }
  });

  it('declare group ide.cloud, version v1beta10, the status subresource and the short names', () => {
    const crds = buildCrds() as Array<{
      spec: {
        group: string;
        names: { shortNames?: string[]; plural: string };
        versions: Array<{ name: string; subresources: object }>;
      };
    }>;
    assert.deepEqual(
      crds.map((c) => [c.spec.names.plural, c.spec.names.shortNames ?? []]),
      [
        ['appdefinitions', ['appdef', 'ad']],
        ['workspaces', ['ws']],
        ['sessions', []],
      ],
    );
    for (const crd of crds) {
      assert.equal(crd.spec.group, 'ide.cloud');
      assert.equal(crd.spec.versions[0]!.name, 'v1beta10');
      assert.deepEqual(crd.spec.versions[0]!.subresources, { status: {} });
    }
  });
});

describe('the conditions list of each kind', () => {
  type Schema = { properties: Record<string, Schema> } & Record<string, unknown>;
  const conditionsOf = (plural: string) => {
    const crd = (
      buildCrds() as Array<{
        spec: { names: { plural: string }; versions: Array<{ schema: { openAPIV3Schema: Schema } }> };
      }>
    ).find((c) => c.spec.names.plural === plural)!;
    return crd.spec.versions[0]!.schema.openAPIV3Schema.properties.status!.properties.conditions!;
  };

  it('is one atomic list on a Session, which only IDE Cloud writes: no field record per condition', () => {
    assert.equal(conditionsOf('sessions')['x-kubernetes-list-type'], 'atomic');
    assert.equal(conditionsOf('sessions')['x-kubernetes-list-map-keys'], undefined);
  });

  it('is a list map keyed by type on the kinds admins may apply', () => {
    for (const plural of ['appdefinitions', 'workspaces']) {
      assert.equal(conditionsOf(plural)['x-kubernetes-list-type'], 'map', plural);
      assert.deepEqual(conditionsOf(plural)['x-kubernetes-list-map-keys'], ['type'], plural);
    }
  });
});
