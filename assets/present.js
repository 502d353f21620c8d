/* Encoder Lab: projector mode, dark theme, exports and small accessibility repairs.
 *
 * Served by the app itself (components/present.py puts it in the page's <head>); it loads
 * nothing from outside. What it does:
 *  - a "Display" bar at the top of every page: Projector (large type, thick lines, high
 *    contrast: the class `el-projector` on <html>) and Dark (Gradio's own `dark` class on
 *    <body>); `?projector=1` / `?dark=1` in the address switch them on at load;
 *  - every Plotly chart follows the mode (larger fonts and lines; on dark, the dark template
 *    and a colour scale that stays readable there) and gets PNG / SVG / HTML buttons, drawn
 *    in the browser by Plotly.js itself (the HTML file inlines plotly.js, fetched from this
 *    app, so it opens offline);
 *  - every table gets a CSV button (Gradio's own "copy table" output, with the headers);
 *  - every bertviz view (an iframe) gets an HTML button: the view with its scripts inlined;
 *    projector mode reaches the view's sandboxed frame as a message (it zooms itself);
 *  - Gradio markup that an accessibility audit refuses gets the missing names / roles;
 *  - Gradio's Plotly chunk (with the app's partial plotly.js) is imported while the visitor
 *    reads the first answer.
 */
(() => {
  "use strict";
  const CFG = window.ENCODER_LAB_PRESENT || {};
  const T = CFG.text || {};
  const root = document.documentElement;
  const PROJECTOR = "el-projector";

  // --- the modes -------------------------------------------------------------------------
  const isProjector = () => root.classList.contains(PROJECTOR);
  const isDark = () => document.body && document.body.classList.contains("dark");

  function setProjector(on) {
    root.classList.toggle(PROJECTOR, on);
    syncBar();
    schedule();
    document.querySelectorAll("iframe[srcdoc]").forEach(tellFrame);
  }

  function setDark(on) {
    document.body.classList.toggle("dark", on);
    syncBar(); // the body's class observer restyles the charts
  }

  function queryFlag(name) {
    const value = new URL(window.location.href).searchParams.get(name);
    return value !== null && ["1", "true", "on", "yes"].includes(value.toLowerCase());
  }

  // --- the bar at the top of every page --------------------------------------------------
  let bar = null;

  function toggleButton(label, help, onClick) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "el-toggle";
    b.textContent = label;
    b.title = help;
    b.setAttribute("aria-pressed", "false");
    b.addEventListener("click", onClick);
    return b;
  }

  function buildBar() {
    if (bar || !document.body) return;
    bar = document.createElement("div");
    bar.id = "el-display-bar";
    bar.setAttribute("role", "toolbar");
    bar.setAttribute("aria-label", T.bar || "Display");
    const name = document.createElement("span");
    name.className = "el-bar-name";
    name.textContent = T.bar || "Display";
    bar.append(
      name,
      toggleButton(T.projector || "Projector", T.projector_help || "", () => setProjector(!isProjector())),
      toggleButton(T.dark || "Dark", T.dark_help || "", () => setDark(!isDark())),
    );
    bar.children[1].id = "el-projector-toggle";
    bar.children[2].id = "el-dark-toggle";
    document.body.prepend(bar);
    syncBar();
  }

  function syncBar() {
    if (!bar) return;
    bar.children[1].setAttribute("aria-pressed", String(isProjector()));
    bar.children[2].setAttribute("aria-pressed", String(isDark()));
  }

  // --- charts follow the mode ------------------------------------------------------------
  const SEQUENTIAL_DARK = "Viridis"; // perceptually even; dark low end, bright high end

  function luminance(colour) {
    const m = String(colour).match(/rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)/);
    let rgb;
    if (m) rgb = m.slice(1, 4).map(Number);
    else if (/^#[0-9a-f]{6}$/i.test(colour)) rgb = [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16));
    else return null;
    return (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) / 255;
  }

  // A scale that starts near white (Blues, Greys, ...) vanishes into a light page at its low
  // end and glares on a dark one: on dark, such sequential scales become Viridis.
  function lightSequential(scale) {
    if (!Array.isArray(scale) || scale.length < 2) return false;
    const first = luminance(scale[0][1]);
    const last = luminance(scale[scale.length - 1][1]);
    return first !== null && last !== null && first > 0.85 && last < 0.6;
  }

  function baseOf(gd) {
    // A figure Gradio just drew has no mark yet: remember what the server sent.
    if (gd.layout.__elBase !== true || !gd.__elBase) {
      const font = (gd.layout.font || {}).size;
      gd.__elBase = {
        font,
        hover: ((gd.layout.hoverlabel || {}).font || {}).size,
        top: (gd.layout.margin || {}).t,
        template: gd.layout.template,
        coloraxis: Object.keys(gd.layout)
          .filter((k) => /^coloraxis\d*$/.test(k))
          .map((k) => [k, gd.layout[k].colorscale]),
        traces: gd.data.map((t) => ({
          type: t.type || "scatter",
          line: t.line ? t.line.width : undefined,
          marker: t.marker && typeof t.marker.size === "number" ? t.marker.size : undefined,
          markerList: Boolean(t.marker && t.marker.size !== undefined && typeof t.marker.size !== "number"),
          colorscale: t.colorscale,
        })),
      };
      gd.layout.__elBase = true;
      gd.layout.__elMode = "";
    }
    return gd.__elBase;
  }

  function stylePlot(gd) {
    const Plotly = window.Plotly;
    if (!Plotly || !gd.layout || !gd.data) return;
    const projector = isProjector();
    const dark = isDark();
    const mode = (projector ? "p" : "") + (dark ? "d" : "");
    const base = baseOf(gd);
    if (gd.layout.__elMode === mode) return;
    gd.layout.__elMode = mode;
    const layout = {
      "font.size": projector ? Math.max(20, 1.6 * (base.font || 12)) : base.font === undefined ? null : base.font,
      "hoverlabel.font.size": projector ? 20 : base.hover === undefined ? null : base.hover,
      // room for the larger title under Gradio's block label
      "margin.t": projector ? (base.top === undefined ? 100 : base.top) + 40 : base.top === undefined ? null : base.top,
      template: dark && CFG.darkTemplate ? CFG.darkTemplate : base.template === undefined ? null : base.template,
    };
    for (const [key, scale] of base.coloraxis) {
      layout[key + ".colorscale"] = dark && lightSequential(scale) ? SEQUENTIAL_DARK : scale;
    }
    // One restyle per trace, with only the attributes that trace has (a per-point size
    // list or a trace without a colour scale is left alone).
    const restyles = base.traces.map((t) => {
      const update = {};
      if (t.type === "scatter" || t.type === "scattergl") {
        update["line.width"] = projector ? Math.max(4, 2 * (t.line || 2)) : t.line === undefined ? null : t.line;
        if (!t.markerList) {
          update["marker.size"] = projector ? Math.max(10, 1.6 * (t.marker || 6)) : t.marker === undefined ? null : t.marker;
        }
      }
      if (t.colorscale !== undefined) {
        update.colorscale = [dark && lightSequential(t.colorscale) ? SEQUENTIAL_DARK : t.colorscale];
      }
      return update;
    });
    Plotly.relayout(gd, layout)
      .then(() => Promise.all(restyles.map((u, i) => (Object.keys(u).length ? Plotly.restyle(gd, u, [i]) : null))))
      .catch(() => {});
  }

  // --- downloads -------------------------------------------------------------------------
  function slug(text, fallback) {
    const s = String(text || "").toLowerCase().replace(/<[^>]*>/g, "").replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
    return (s || fallback).slice(0, 60);
  }

  function save(blob, filename) {
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = filename;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }

  // Text safe inside an inline script element: nothing in it can close the element.
  const scriptSafe = (text) => text.replace(/<\/(script)/gi, "<\\/$1").replace(/\x3C!--/g, "<\\!--");

  let plotlySource = null;
  function plotlyJs() {
    plotlySource = plotlySource || fetch(CFG.plotlyUrl || "export/plotly.js").then((r) => {
      if (!r.ok) throw new Error("plotly.js is not served (" + r.status + ")");
      return r.text();
    });
    return plotlySource;
  }

  function figureJson(value) {
    // Typed arrays (Plotly's binary-encoded data) as plain lists; "<" escaped (inline script).
    return JSON.stringify(value, (k, v) => (ArrayBuffer.isView(v) ? Array.from(v) : k.startsWith("__el") ? undefined : v))
      .replace(/</g, "\\u003c");
  }

  async function chartHtml(gd, title) {
    const js = await plotlyJs();
    const esc = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
    return (
      '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>' + esc(title) + "</title></head>" +
      '<body style="margin:0"><div id="chart" style="width:100%;height:95vh"></div>' +
      "\x3Cscript>" + scriptSafe(js) + "<\/script>" +
      "\x3Cscript>Plotly.newPlot(\"chart\", " + figureJson(gd.data) + ", " + figureJson(gd.layout) +
      ", {responsive: true});<\/script></body></html>"
    );
  }

  function blockOf(el) {
    return el.closest(".block") || el.parentElement;
  }

  function labelOf(el, fallback) {
    const block = blockOf(el);
    const label = block && block.querySelector('[data-testid="block-label"], label, .label');
    return (label && label.textContent.trim()) || (block && block.id) || fallback;
  }

  function exportBar(kind, name, buttons) {
    const group = document.createElement("div");
    group.className = "el-export";
    group.setAttribute("role", "group");
    group.setAttribute("aria-label", (T.export_group || "Export") + ": " + name);
    for (const [label, aria, run] of buttons) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.setAttribute("aria-label", aria);
      b.dataset.export = kind + "-" + label.toLowerCase();
      b.addEventListener("click", () => Promise.resolve().then(run).catch((e) => {
        console.error(e);
        b.setAttribute("data-error", String(e && e.message));
      }));
      group.append(b);
    }
    return group;
  }

  function addChartExport(gd) {
    if (gd.__elExport) return;
    gd.__elExport = true;
    const name = labelOf(gd, "chart");
    const file = () => slug(((gd.layout.title || {}).text) || name, "chart");
    const image = (format) => () =>
      window.Plotly.downloadImage(gd, { format, filename: file(), scale: format === "png" ? 2 : 1 });
    const group = exportBar("chart", name, [
      ["PNG", (T.png || "Download this chart as PNG") + " (" + name + ")", image("png")],
      ["SVG", (T.svg || "Download this chart as SVG") + " (" + name + ")", image("svg")],
      ["HTML", (T.html || "Download this chart as a standalone HTML file") + " (" + name + ")",
        async () => save(new Blob([await chartHtml(gd, name)], { type: "text/html" }), file() + ".html")],
    ]);
    gd.after(group);
  }

  // Tables: Gradio's "Copy table data" button copies the table's rows as CSV (in the order
  // and filter shown); its output is caught on its way to the clipboard, the headers added.
  function csvCell(text) {
    return /[",\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }

  async function tableCsv(table) {
    const copy = table.querySelector('button[aria-label="Copy table data"], button[title="Copy table data"]');
    if (!copy) throw new Error("this table has no copy button");
    let caught = null;
    Object.defineProperty(navigator, "clipboard", {
      configurable: true,
      value: { writeText: async (text) => { caught = text; } },
    });
    try {
      // a click outside the table first: Gradio then drops any cell selection, and copies
      // every row (with a selection it would copy only the selected cells)
      document.body.dispatchEvent(new MouseEvent("click", { bubbles: true }));
      copy.click();
      for (let i = 0; i < 100 && caught === null; i++) await new Promise((r) => setTimeout(r, 20));
    } finally {
      delete navigator.clipboard; // the browser's own again
    }
    if (caught === null) throw new Error("the table gave no data");
    const heads = [...table.querySelectorAll('thead th[role="columnheader"]')]
      .map((th) => th.getAttribute("title") ?? th.textContent.trim());
    return heads.map(csvCell).join(",") + "\n" + caught + "\n";
  }

  function addTableExport(table) {
    if (table.__elExport) return;
    table.__elExport = true;
    const grid = table.querySelector('[role="grid"]');
    const name = (grid && grid.getAttribute("aria-label")) || labelOf(table, "table");
    table.after(exportBar("table", name, [
      ["CSV", (T.csv || "Download this table as CSV") + " (" + name + ")",
        async () => save(new Blob([await tableCsv(table)], { type: "text/csv" }), slug(name, "table") + ".csv")],
    ]));
  }

  // bertviz views: the iframe's page with require.js inlined and d3 / jQuery as data: URLs
  // (require.js loads a data: path as it is), so the file opens with no server.
  async function asDataUrl(url) {
    const blob = await (await fetch(url)).blob();
    return new Promise((done) => {
      const reader = new FileReader();
      reader.onload = () => done(reader.result.replace(/^data:[^;,]*/, "data:text/javascript"));
      reader.readAsDataURL(blob);
    });
  }

  async function standaloneView(page) {
    const local = (url) => !/^[a-z]+:|^\/\//i.test(url);
    let out = page;
    for (const m of [...page.matchAll(/\x3Cscript src="([^"]+\.js)"><\/script>/g)]) {
      if (!local(m[1])) continue;
      const js = await (await fetch(m[1])).text();
      out = out.replace(m[0], () => "\x3Cscript>" + scriptSafe(js) + "<\/script>");
    }
    for (const m of [...page.matchAll(/(\b\w+):\s*"([\w./-]+)"/g)]) {
      if (!local(m[2]) || !m[2].startsWith(CFG.vendorPrefix || "vendor/")) continue;
      out = out.replace(m[0], () => m[1] + ": " + JSON.stringify("__EL_DATA_" + m[1]));
      const data = await asDataUrl(m[2] + ".js");
      out = out.replace(JSON.stringify("__EL_DATA_" + m[1]), () => JSON.stringify(data));
    }
    return out;
  }

  function addViewExport(frame) {
    if (frame.__elExport || !frame.getAttribute("srcdoc")) return;
    frame.__elExport = true;
    const name = frame.title || "view";
    frame.after(exportBar("view", name, [
      ["HTML", (T.view_html || "Download this view as a standalone HTML file") + " (" + name + ")",
        async () => save(new Blob([await standaloneView(frame.getAttribute("srcdoc"))], { type: "text/html" }), slug(name, "view") + ".html")],
    ]));
  }

  // --- bertviz views: projector mode reaches their sandboxed frames as messages ------------
  // A view's page (components/attention_plots.py) asks for the mode when it loads and is told
  // of every change; it zooms itself and says by how much, and its frame grows as much.
  function frameOf(source) {
    return [...document.querySelectorAll("iframe[srcdoc]")].find((f) => f.contentWindow === source);
  }

  function tellFrame(frame) {
    if (frame.contentWindow) frame.contentWindow.postMessage({ encoderLabDisplay: "mode", projector: isProjector() }, "*");
  }

  function resizeFrame(frame, zoom) {
    if (frame.dataset.elHeight === undefined) frame.dataset.elHeight = frame.style.height || "";
    const base = parseFloat(frame.dataset.elHeight);
    if (base && zoom >= 1 && zoom <= 2) frame.style.height = Math.round(base * zoom) + "px";
  }

  window.addEventListener("message", (e) => {
    const data = e.data;
    if (!data || typeof data !== "object") return;
    const frame = frameOf(e.source);
    if (!frame) return;
    if (data.encoderLabDisplay === "ask") tellFrame(frame);
    else if (data.encoderLabDisplay === "zoom" && typeof data.zoom === "number") resizeFrame(frame, data.zoom);
  });

  // --- accessibility repairs of Gradio's markup -------------------------------------------
  function repair(scope) {
    // The empty-plot placeholder: an aria-label on a <div> with no role.
    scope.querySelectorAll(".empty[aria-label]:not([role])").forEach((el) => el.setAttribute("role", "img"));
    // Clickable token chips that hold only a space have no accessible name.
    scope.querySelectorAll('.token[role="button"]:not([aria-label])').forEach((el) => {
      if (!el.textContent.trim()) el.setAttribute("aria-label", T.space || "space");
    });
  }

  // --- Gradio's Plotly chunk, loaded while the visitor reads the first answer ---------------
  // The first screen draws no Plotly chart (the fill-mask bars are HTML), so the page's boot
  // and its first answer do not wait for plotly.js. The first chart opened later would: the
  // app serves Gradio's chunk with its partial plotly.js bundle (components/shell/present.py,
  // about 0.1 s of this thread to evaluate on a 2-core machine, against 1.1 s for the full
  // plotly.js Gradio inlines; bench/first_visit.py measures the views). Once the first answer
  // is drawn (or a few seconds after start when the page opened elsewhere), the chunk is
  // imported when the page is idle; a module runs once per address, so Gradio's own import
  // of it finds it done.
  const WARM_AFTER_MS = 4000;
  let plotlyWarmed = false;
  let startedAt = 0;
  function warmPlotly() {
    if (plotlyWarmed || !CFG.plotlyChunk) return;
    const answered = document.querySelector("#fill-mask-bars table, .js-plotly-plot");
    if (!answered && performance.now() - startedAt < WARM_AFTER_MS) return;
    // Gradio's entry module (assets/index-*.js): the chunk sits beside it
    const entry = [...document.querySelectorAll('script[type="module"][src]')]
      .find((s) => /\/assets\/index-[^/]*\.js$/.test(s.src));
    if (!entry) return;
    plotlyWarmed = true;
    const url = new URL(CFG.plotlyChunk, entry.src).href;
    const idle = window.requestIdleCallback || ((f) => setTimeout(f, 200));
    idle(() => import(url).catch(() => { /* Gradio loads it itself when a chart needs it */ }), { timeout: 5000 });
  }

  // --- watch the page ----------------------------------------------------------------------
  let pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      buildBar();
      repair(document);
      warmPlotly();
      document.querySelectorAll(".js-plotly-plot").forEach((gd) => {
        if (!gd.__elHooked && typeof gd.on === "function") {
          gd.__elHooked = true;
          gd.on("plotly_afterplot", schedule);
        }
        addChartExport(gd);
        stylePlot(gd);
      });
      document.querySelectorAll(".table-container").forEach((t) => {
        if (t.querySelector('[role="grid"]')) addTableExport(t);
      });
      document.querySelectorAll("iframe[srcdoc]").forEach(addViewExport);
    });
  }

  function start() {
    startedAt = performance.now();
    setTimeout(schedule, WARM_AFTER_MS + 50); // the page may have gone quiet before then
    if (queryFlag("projector")) root.classList.add(PROJECTOR);
    // a class round's link (?round=CODE): the page shows the round alone (assets/style.css)
    if (new URLSearchParams(window.location.search).has("round")) root.classList.add("el-round-page");
    buildBar();
    if (queryFlag("dark")) setDark(true);
    new MutationObserver(schedule).observe(document.body, { childList: true, subtree: true });
    new MutationObserver(() => { syncBar(); schedule(); })
      .observe(document.body, { attributes: true, attributeFilter: ["class"] });
    schedule();
  }

  window.encoderLabDisplay = { setProjector, setDark, isProjector, isDark };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
