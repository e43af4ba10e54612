import { createHash } from 'node:crypto';
import { PROGRESS_STEPS } from './messages.js';
import type { LaunchParameters } from './params.js';

/** JSON safe inside a <script> element: no `<`, no line separators. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const STYLE = `
:root{color-scheme:light dark;--accent:#2563eb;--bg:#f8fafc;--card:#fff;--text:#0f172a;--muted:#475569;--danger:#b91c1c}
@media (prefers-color-scheme:dark){:root{--bg:#0f172a;--card:#1e293b;--text:#f1f5f9;--muted:#cbd5e1;--danger:#fca5a5;--accent:#60a5fa}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;background:var(--bg);color:var(--text)}
main{max-width:40rem;margin:0 auto;padding:1.5rem 1rem}
.card{background:var(--card);border-radius:.75rem;padding:1.5rem;box-shadow:0 1px 3px rgba(0,0,0,.15)}
h1{font-size:1.5rem;margin:0 0 1rem}h2{font-size:1.25rem;margin:0 0 .75rem}
fieldset{border:0;padding:0;margin:0 0 1rem}legend{font-weight:600;margin-bottom:.5rem}
.apps{display:grid;grid-template-columns:repeat(auto-fill,minmax(10rem,1fr));gap:.5rem}
.apps label{display:flex;gap:.5rem;align-items:center;padding:.6rem .75rem;border:1px solid var(--muted);border-radius:.5rem;cursor:pointer}
.apps input:checked+span{font-weight:600}
label.field{display:block;margin:0 0 1rem}label.field span{display:block;font-weight:600;margin-bottom:.25rem}
select,input[type=text],input[type=email]{width:100%;padding:.5rem;font:inherit;border:1px solid var(--muted);border-radius:.375rem;background:var(--card);color:var(--text)}
button{font:inherit;padding:.6rem 1.2rem;border-radius:.5rem;border:0;background:var(--accent);color:#fff;cursor:pointer}
button.secondary{background:transparent;color:var(--text);border:1px solid var(--muted)}
button:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
progress{width:100%;height:1rem;accent-color:var(--accent)}
.steps{list-style:none;padding:0;margin:1rem 0}
.steps li{padding:.2rem 0 .2rem 1.75rem;position:relative;color:var(--muted)}
.steps li::before{content:"○";position:absolute;left:.25rem}
.steps li[data-state=done]{color:var(--text)}.steps li[data-state=done]::before{content:"✓"}
.steps li[data-state=current]{color:var(--text);font-weight:600}.steps li[data-state=current]::before{content:"●"}
.meta{display:flex;justify-content:space-between;flex-wrap:wrap;gap:.5rem;color:var(--muted)}
.error h2{color:var(--danger)}
.actions{display:flex;gap:.75rem;flex-wrap:wrap;margin-top:1rem}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
[hidden]{display:none!important}
`;

/**
 * The page's script inline: a student who clicks a deep link loads the page twice (before and after
 * the provider's sign-in round trip), and a script of its own would be one more request each time.
 * Refuses a script the HTML parser would end early or change; the page's policy admits it by its hash.
 */
export function inlineScript(script: string): { element: string; hash: string } {
  // The HTML parser would end the element early at these, or change \r and NUL (and so the hash).
  if (/<\/script|<!--|[\r\0]/i.test(script))
    throw new Error('the page script holds </script, <!--, a CR or a NUL: it cannot be inlined');
  return {
    element: `<script>${script}</script>`,
    hash: `'sha256-${createHash('sha256').update(script, 'utf8').digest('base64')}'`,
  };
}

/**
 * The page: four screens (loading, launch, progress, error), filled in by its script (`inlineScript`).
 * Its configuration (config.json's content, with the provider's discovery document when the server
 * has it) and the parameters that came by form POST are embedded for the script (never in the address).
 */
export function renderPage(input: { posted?: LaunchParameters; config?: unknown; script?: string }): string {
  const steps = PROGRESS_STEPS.map((s) => `<li data-step="${s.id}" data-state="pending">${s.label}</li>`).join('');
  const config =
    input.config === undefined
      ? ''
      : `<script type="application/json" id="page-config">${scriptJson(input.config)}</script>`;
  const posted = input.posted
    ? `<script type="application/json" id="posted-parameters">${scriptJson(input.posted)}</script>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Start your IDE</title>
<style>${STYLE}</style>
</head>
<body data-screen="loading">
<main>
<h1>Start your IDE</h1>
<div id="status" class="sr-only" role="status" aria-live="polite"></div>
<section id="screen-loading" class="card" aria-busy="true"><p>Loading…</p></section>
<section id="screen-launch" class="card" hidden aria-labelledby="launch-title">
  <h2 id="launch-title">Choose your IDE</h2>
  <form id="launch-form" novalidate>
    <fieldset><legend>IDE type</legend><div class="apps" id="apps"></div></fieldset>
    <label class="field" id="build-system-field" hidden><span>Build system</span><select id="build-system" name="buildSystem"></select></label>
    <label class="field" id="user-field" hidden><span>Your user id (e-mail)</span><input id="user" name="user" type="email" autocomplete="email"></label>
    <p id="launch-hint" hidden></p>
    <div class="actions"><button id="launch-button" type="submit">Launch IDE</button></div>
  </form>
</section>
<section id="screen-progress" class="card" hidden aria-labelledby="progress-title">
  <h2 id="progress-title">Starting your IDE</h2>
  <progress id="progress-bar" max="${PROGRESS_STEPS.length}" value="0" aria-labelledby="progress-title"></progress>
  <ol class="steps" id="steps">${steps}</ol>
  <div class="meta"><span id="current-step" aria-live="polite"></span><span>Elapsed: <time id="elapsed">0:00</time></span></div>
  <p id="progress-detail" class="meta"></p>
  <div class="actions"><button id="cancel-button" type="button" class="secondary">Cancel</button></div>
</section>
<section id="screen-error" class="card error" hidden aria-labelledby="error-title" role="alert">
  <h2 id="error-title"></h2>
  <p id="error-text"></p>
  <div class="actions"><button id="retry-button" type="button" hidden>Try again</button></div>
</section>
</main>
${config}
${posted}
${input.script ?? ''}
</body>
</html>`;
}
