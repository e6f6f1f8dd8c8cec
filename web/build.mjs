// Bundles the dashboard with esbuild into OUT (argument, default dist/):
// OUT/index.html plus OUT/assets/early-HASH.js, app-HASH.js (+ chunk-HASH.js:
// uPlot, loaded with the first chart) and app-HASH.css (content-hashed
// names: beatline-server caches them a year, index.html never).
//   node build.mjs [OUT]
import * as esbuild from 'esbuild';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(process.argv[2] || path.join(here, 'dist'));
await rm(path.join(out, 'assets'), { recursive: true, force: true });
await mkdir(path.join(out, 'assets'), { recursive: true });
const common = {
  bundle: true,
  minify: true,
  sourcemap: false,
  target: ['chrome110', 'firefox110', 'safari16'],
  outdir: path.join(out, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  metafile: true,
  logLevel: 'warning',
  legalComments: 'linked',
};
const app = await esbuild.build({
  ...common,
  entryPoints: { app: path.join(here, 'src/main.jsx') },
  format: 'esm',
  // uPlot is imported when a chart is first shown: its own chunk
  splitting: true,
  chunkNames: 'chunk-[hash]',
  jsx: 'automatic',
  jsxImportSource: 'preact',
});
// early: a tiny classic script index.html runs first, before the parser
// goes on (src/early.js), so it has no module syntax
const earlyBuild = await esbuild.build({ ...common, entryPoints: { early: path.join(here, 'src/early.js') }, format: 'iife' });
const result = { metafile: { outputs: { ...app.metafile.outputs, ...earlyBuild.metafile.outputs } } };
const files = Object.keys(result.metafile.outputs).map((f) => path.basename(f));
const js = files.find((f) => /^app-[A-Z0-9]{8}\.js$/.test(f));
const css = files.find((f) => /^app-[A-Z0-9]{8}\.css$/.test(f));
const early = files.find((f) => /^early-[A-Z0-9]{8}\.js$/.test(f));
if (!js || !css || !early) throw new Error(`build: no hashed app js/css or early js in ${files.join(', ')}`);
const html = (await readFile(path.join(here, 'src/index.html'), 'utf8'))
  .replace('%EARLY%', `assets/${early}`)
  .replace('%JS%', `assets/${js}`)
  .replace('%CSS%', `assets/${css}`);
await writeFile(path.join(out, 'index.html'), html);
let bytes = 0;
for (const [f, o] of Object.entries(result.metafile.outputs)) bytes += o.bytes;
console.log(`web: ${out} (${files.join(', ')}; ${bytes} bytes)`);
