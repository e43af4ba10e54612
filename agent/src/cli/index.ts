// Entry bundled to dist/cli.mjs and started by bin/ide-cloud-agent.mjs.
import { runCli } from './main.js';

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  out: (line) => console.log(line),
  err: (line) => console.error(line),
});
