import type { AppDefinitionSpecInput } from './app-definition.js';

/** The app definitions IDE Cloud ships (service spec, "App definitions shipped by default"). */
export interface ShippedAppDefinition {
  spec: AppDefinitionSpecInput;
  /** Label on the landing page; none: deployed but hidden, still launchable by name. */
  landingPageLabel?: string;
  /** Build-system choice offered for `-templates` definitions. */
  buildSystems?: { id: string; label: string }[];
}

const IDE_PORT = 3000;
const ROUTE = 'ide-cloud-sessions';

function definition(name: string, image: string, extra: Partial<AppDefinitionSpecInput> = {}): AppDefinitionSpecInput {
  return {
    name,
    image: `ide-cloud/session-${image}:latest`,
    port: IDE_PORT,
    ingressname: ROUTE,
    options: { dataBridgeEnabled: 'true', dataBridgePort: '16281' },
    ...extra,
  };
}

// Java needs more than the defaults to run a build tool next to the language server.
const javaResources = { requestsMemory: '1000M', limitsMemory: '3000M', requestsCpu: '500m' };

export const SHIPPED_APP_DEFINITIONS: ShippedAppDefinition[] = [
  {
    spec: definition('java-17-templates-latest', 'java-17', javaResources),
    landingPageLabel: 'Java 17',
    buildSystems: [
      { id: 'maven', label: 'Maven' },
      { id: 'gradle', label: 'Gradle' },
    ],
  },
  { spec: definition('java-17-latest', 'java-17', javaResources) },
  {
    spec: definition('c-templates-latest', 'c'),
    landingPageLabel: 'C',
    buildSystems: [
      { id: 'make', label: 'Make' },
      { id: 'bazel', label: 'Bazel' },
    ],
  },
  { spec: definition('c-latest', 'c') },
  { spec: definition('javascript-latest', 'javascript'), landingPageLabel: 'JavaScript' },
  { spec: definition('ocaml-latest', 'ocaml'), landingPageLabel: 'OCaml' },
  { spec: definition('python-latest', 'python'), landingPageLabel: 'Python' },
  { spec: definition('rust-latest', 'rust'), landingPageLabel: 'Rust' },
];
