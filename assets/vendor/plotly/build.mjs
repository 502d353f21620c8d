// Builds plotly-lab.min.js from plotly.js's source with esbuild, as plotly.js's own
// esbuild-config.js builds its dist (iife, global Plotly), from index.js's trace types.
// Run from this folder: npm ci && npm run build (README.md).
import * as esbuild from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

// plotly.js's own esbuild plugin for its dist: strips the attributes' descriptions (docs text)
const stripMeta = createRequire(import.meta.url)('plotly.js/tasks/compress_attributes.js');

// the trace types index.js registers (scatter is in plotly.js's core); present.py reads this list
const TRACES = ['scatter', 'bar', 'heatmap'];
const version = JSON.parse(readFileSync('node_modules/plotly.js/package.json', 'utf8')).version;

await esbuild.build({
    entryPoints: ['index.js'],
    outfile: 'plotly-lab.min.js',
    format: 'iife',
    globalName: 'Plotly',
    bundle: true,
    minify: true,
    sourcemap: false,
    legalComments: 'eof',
    alias: { stream: 'stream-browserify' },
    define: { global: 'window', 'define.amd': 'false', 'process.env.NODE_DEBUG': 'false' },
    loader: { '.css': 'empty' },  // maplibre's stylesheet: map traces only, not in this bundle
    target: 'es2016',
    banner: { js: `/*! plotly.js v${version}, partial bundle (${TRACES.join(", ")}) | MIT License | built by build.mjs */` },
    // a module script keeps a top-level var to itself: set the global Gradio's chunk reads
    footer: { js: 'window.Plotly=Plotly;' },
    plugins: [stripMeta],
    logLevel: 'info',
});

// plotly.js's config defaults topojsonURL to an address on plotly's CDN (read only by geo
// traces, which this bundle does not have). The app loads nothing from outside: the default
// becomes a relative path, so no outside address for a resource is in the file.
const TOPOJSON_DEFAULT = /(topojsonURL:\{[^}]*dflt:)"https:\/\/[^"]*"/g;
let built = readFileSync('plotly-lab.min.js', 'utf8');
if ((built.match(TOPOJSON_DEFAULT) || []).length !== 1) throw new Error('expected one topojsonURL default in the bundle');
built = built.replace(TOPOJSON_DEFAULT, '$1"topojson/"');
if (/cdn\./i.test(built)) throw new Error('a CDN address is left in the bundle');
writeFileSync('plotly-lab.min.js', built);
