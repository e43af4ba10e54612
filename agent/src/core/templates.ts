// Build-system starters selected by TEMPLATE: a few files that build and run a hello-world, written
// only into a workspace that holds nothing yet (no GIT_URI, or an empty repository), never over a file.
import { mkdir, readdir, writeFile, access } from 'node:fs/promises';
import path from 'node:path';
import { AgentError } from './errors.js';

const MAVEN_POM = `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>exercise</groupId>
  <artifactId>exercise</artifactId>
  <version>1.0-SNAPSHOT</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
</project>
`;

const JAVA_MAIN = `package exercise;

public class Main {
    public static void main(String[] args) {
        System.out.println("Hello, world");
    }
}
`;

const C_MAIN = `#include <stdio.h>

int main(void) {
    printf("Hello, world\\n");
    return 0;
}
`;

export const TEMPLATES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  maven: { 'pom.xml': MAVEN_POM, 'src/main/java/exercise/Main.java': JAVA_MAIN, '.gitignore': 'target/\n' },
  gradle: {
    'settings.gradle': "rootProject.name = 'exercise'\n",
    'build.gradle': "plugins { id 'application' }\n\napplication { mainClass = 'exercise.Main' }\n",
    'src/main/java/exercise/Main.java': JAVA_MAIN,
    '.gitignore': '.gradle/\nbuild/\n',
  },
  make: {
    Makefile:
      'main: main.c\n\t$(CC) -Wall -o $@ $<\n\nrun: main\n\t./main\n\nclean:\n\trm -f main\n\n.PHONY: run clean\n',
    'main.c': C_MAIN,
    '.gitignore': 'main\n',
  },
  bazel: {
    'MODULE.bazel': 'module(name = "exercise")\n',
    BUILD: 'cc_binary(\n    name = "main",\n    srcs = ["main.c"],\n)\n',
    'main.c': C_MAIN,
    '.gitignore': 'bazel-*\n',
  },
};

/** True when the folder holds nothing but possibly `.git`. */
export async function isBlankWorkspace(dir: string): Promise<boolean> {
  const entries = await readdir(dir).catch(() => []);
  return entries.every((entry) => entry === '.git');
}

/** Writes the starter's files that do not exist yet; returns the paths written. */
export async function applyTemplate(name: string, dir: string): Promise<string[]> {
  const files = TEMPLATES[name.trim().toLowerCase()];
  if (!files) {
    throw new AgentError(
      'UnknownTemplate',
      `TEMPLATE "${name}" is not a known starter`,
      `Use one of ${Object.keys(TEMPLATES).join(', ')}, or leave TEMPLATE unset`,
    );
  }
  const written: string[] = [];
  for (const [relative, content] of Object.entries(files)) {
    const target = path.join(dir, relative);
    const exists = await access(target).then(
      () => true,
      () => false,
    );
    if (exists) continue;
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, content, { flag: 'wx' });
    written.push(relative);
  }
  return written;
}
