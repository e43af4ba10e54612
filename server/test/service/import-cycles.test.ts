// Two modules that import each other (even for types only) cannot be read, or moved, one without the
// other: the service's modules and those it shares import one way. Read with TypeScript's own
// pre-processor, so an import in any form counts.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
const FOLDERS = ['service', 'landing', 'http', 'kube', 'model', 'build'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return entry.name.endsWith('.ts') ? [file] : [];
  });
}

/** The files of server/src that `file` imports by relative path. */
function importsOf(file: string): string[] {
  return ts
    .preProcessFile(readFileSync(file, 'utf8'), true, true)
    .importedFiles.map((imported) => imported.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => path.resolve(path.dirname(file), name).replace(/\.js$/, '.ts'));
}

/** Every cycle through the files, each as the path that closes it (first file repeated at its end). */
function cycles(files: string[]): string[][] {
  const graph = new Map(files.map((file) => [file, importsOf(file).filter((dep) => files.includes(dep))]));
  const found: string[][] = [];
  const done = new Set<string>();
  const visit = (file: string, trail: string[]) => {
    const at = trail.indexOf(file);
    if (at >= 0) {
      found.push([...trail.slice(at), file]);
      return;
    }
    if (done.has(file)) return;
    for (const dep of graph.get(file) ?? []) visit(dep, [...trail, file]);
    done.add(file);
  };
  for (const file of files) visit(file, []);
  return found;
}

describe('server/src: imports run one way', () => {
  it(`no cycle among the modules of ${FOLDERS.join(', ')}`, () => {
    const files = FOLDERS.flatMap((folder) => sourceFiles(path.join(src, folder)));
    assert.ok(files.length > 50, `read ${files.length} files`);
    const names = cycles(files).map((cycle) => cycle.map((file) => path.relative(src, file)).join(' -> '));
    assert.deepEqual(names, []);
  });
});
