'use strict';
// The trace types Encoder Lab's charts use: scatter (in plotly.js's core), bar, heatmap.
// A chart of any other type draws nothing with this bundle: add its module here, rebuild
// (README.md), and add the type to TRACES in components/shell/present.py.
var Plotly = require('plotly.js/lib/core');

Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/heatmap'),
]);

module.exports = Plotly;
