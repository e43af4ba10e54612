// No container engine runs here, so the Dockerfiles are checked by parsing them: dockerfile-utils
// validates the syntax, and our rules (pinned bases, non-root user, no secrets in layers) run over the
// parse tree from dockerfile-ast.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DockerfileParser } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import YAML from 'yaml';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DOCKERFILES = [
  'images/auth-proxy/Dockerfile',
  'images/server/Dockerfile',
  'images/session-base/Dockerfile',
  'images/session/Dockerfile',
];

interface Stage {
  name?: string;
  base: string;
  instructions: { keyword: string; args: string }[];
}

function parse(file: string): { args: Map<string, string>; stages: Stage[] } {
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const instruction of DockerfileParser.parse(readFileSync(path.join(root, file), 'utf8')).getInstructions()) {
    const keyword = instruction.getKeyword();
    // The instruction without its keyword, flags such as --from included.
    const text = instruction.getTextContent().slice(keyword.length).trim();
    if (keyword === 'FROM') {
      const [base, as, name] = text.split(/\s+/);
      stages.push({ base: base!, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
    } else if (stages.length === 0 && keyword === 'ARG') {
      const [key, value] = text.split('=');
      args.set(key!, value ?? '');
    } else {
      stages.at(-1)?.instructions.push({ keyword, args: text });
    }
  }
  return { args, stages };
}

/** A base image is pinned when it names an exact version (x.y…) or a digest, never `latest` or nothing. */
function isPinned(image: string): boolean {
  if (/@sha256:[0-9a-f]{64}$/.test(image)) return true;
  const tag = image.includes(':') ? image.slice(image.lastIndexOf(':') + 1) : '';
  return /^v?\d+\.\d+/.test(tag);
}

const SECRET_NAME = /(TOKEN|PASSWORD|PASSWD|SECRET|API_?KEY|PRIVATE_?KEY|CREDENTIAL)/i;

describe('Dockerfiles', () => {
  for (const file of DOCKERFILES) {
    describe(file, () => {
      const text = readFileSync(path.join(root, file), 'utf8');
      const { args, stages } = parse(file);
      const stageNames = new Set(stages.map((s) => s.name).filter(Boolean));

      it('is valid Dockerfile syntax (dockerfile-utils)', async () => {
        const problems = await validate(text);
        assert.deepEqual(
          problems.map((p) => `${p.range.start.line + 1}: ${p.message}`),
          [],
        );
      });

      it('pins every external base image to a version', () => {
        for (const stage of stages) {
          if (stageNames.has(stage.base)) continue;
          const image = stage.base.replace(/^\$\{(\w+)\}$/, (_, name: string) => args.get(name) ?? '');
          if (image.startsWith('ide-cloud/')) {
            assert.match(image, /:\d+\.\d+\.\d+$/, `${stage.base}: IDE Cloud's own images by release`);
          } else {
            assert.ok(isPinned(image), `${stage.base} (${image}) is not pinned`);
          }
        }
      });

      it('runs as a non-root user in every final stage', () => {
        const usedAsBase = new Set(stages.map((s) => s.base));
        const usedByCopy = new Set(
          stages.flatMap((s) => s.instructions.flatMap((i) => [...i.args.matchAll(/--from=(\S+)/g)].map((m) => m[1]))),
        );
        const finals = stages.filter((s) => !s.name || (!usedAsBase.has(s.name) && !usedByCopy.has(s.name)));
        assert.ok(finals.length > 0);
        for (const stage of finals) {
          let user: string | undefined;
          for (let s: Stage | undefined = stage; s && !user; s = stages.find((x) => x.name === s!.base)) {
            user = s.instructions.filter((i) => i.keyword === 'USER').at(-1)?.args;
          }
          assert.ok(user, `stage ${stage.name ?? '(last)'} sets no USER`);
          assert.doesNotMatch(user, /^(root|0)(:|$)/, `stage ${stage.name ?? '(last)'} runs as root`);
        }
      });

      it('puts no secrets into layers and copies only files that exist', () => {
        for (const stage of stages) {
          for (const { keyword, args: content } of stage.instructions) {
            if (keyword === 'ENV' || keyword === 'ARG') {
              for (const [name] of content.matchAll(/(\w+)=/g)) assert.doesNotMatch(name, SECRET_NAME, content);
            }
            if (keyword === 'ADD') assert.doesNotMatch(content, /https?:\/\//, 'ADD from a URL');
            if (keyword === 'COPY' && !content.includes('--from=')) {
              const sources = content.split(/\s+/).slice(0, -1);
              for (const source of sources) {
                assert.doesNotMatch(source, /(\.npmrc|\.env|id_rsa|\.pem|kubeconfig)$/, source);
                if (!source.includes('*')) assert.ok(existsSync(path.join(root, source)), `${source} does not exist`);
              }
            }
          }
        }
      });
    });
  }

  it('has a session image with its packages for every app definition of the chart', () => {
    const images = JSON.parse(readFileSync(path.join(root, 'images/session/images.json'), 'utf8')) as Record<
      string,
      string
    >;
    const values = YAML.parse(readFileSync(path.join(root, 'charts/ide-cloud/values.yaml'), 'utf8')) as {
      appDefinitions: { apps: Record<string, { image: string }> };
    };
    const wanted = new Set(Object.values(values.appDefinitions.apps).map((a) => a.image.replace(/^ide-cloud\//, '')));
    assert.deepEqual([...wanted].sort(), Object.keys(images).sort());
  });
});
