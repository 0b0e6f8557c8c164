// Line charts on uPlot (vendored under vendor/, MIT). A chart is drawn once its box has a width
// and follows the box's size afterwards.
import { h } from './dom.js';

const palette = ['#2f6fdf', '#e0782b', '#2a9d6a', '#c03b5b', '#7c5cc4', '#8c8c8c'];

// lineChart draws series over time. points: [{t: Date|ISO string|seconds, ...}] in any order;
// series: [{key, label, scale?}] picks the values (times scale, default 1). format(v) writes a
// value on the axis and in the legend (default: the number). With fit, the leading points where
// every series is zero are left out (one kept before the first value), so a server up for five
// minutes shows five minutes, not an hour of flat zero; the time axis spans the points drawn.
// An empty points list shows a note instead.
export function lineChart(name, series, points, { height = 220, yLabel = '', format = null, fit = false } = {}) {
  if (fit) points = fitted(points, series);
  const box = h('div', { class: 'chart', dataset: { chart: name, points: String(points.length) } });
  if (points.length === 0) {
    box.appendChild(h('p', { class: 'muted' }, 'No data points in this window yet.'));
    return box;
  }
  if (typeof window.uPlot !== 'function') {
    box.appendChild(h('p', { class: 'muted' }, 'The chart library did not load.'));
    return box;
  }
  const rows = points
    .map((p) => ({ p, t: toSeconds(p.t) }))
    .filter((r) => Number.isFinite(r.t))
    .sort((a, b) => a.t - b.t);
  const data = [rows.map((r) => r.t), ...series.map((s) => rows.map((r) => scaled(r.p[s.key], s.scale)))];
  const axis = { label: yLabel, size: format ? 70 : 60 };
  if (format) axis.values = (_u, vals) => vals.map((v) => format(v));
  let plot = null;
  const opts = (width) => ({
    width,
    height,
    legend: { show: true },
    scales: { x: { time: true } },
    axes: [{}, axis],
    series: [{}, ...series.map((s, i) => ({
      label: s.label, stroke: palette[i % palette.length], width: 2, points: { show: rows.length < 3 },
      value: format ? (_u, v) => (v === null || v === undefined ? '–' : format(v)) : undefined,
    }))],
  });
  const ro = new ResizeObserver(() => {
    const w = Math.floor(box.clientWidth);
    if (w <= 0) return;
    if (!plot) plot = new window.uPlot(opts(w), data, box);
    else plot.setSize({ width: w, height });
  });
  ro.observe(box);
  // The shell calls this when the view is replaced (dispose in app.js).
  box.dispose = () => { ro.disconnect(); if (plot) plot.destroy(); };
  return box;
}

function toSeconds(t) {
  if (typeof t === 'number') return t;
  if (t instanceof Date) return t.getTime() / 1000;
  return new Date(t).getTime() / 1000;
}

function scaled(v, scale = 1) {
  if (v === null || v === undefined) return null;
  const n = Number(v) * scale;
  return Number.isFinite(n) ? n : null;
}

// fitted drops the points before the first one with a non-zero value, keeping the one just
// before it (where the line starts from zero) and at least the last MIN_POINTS.
const MIN_POINTS = 5;
function fitted(points, series) {
  const sorted = [...points].sort((a, b) => toSeconds(a.t) - toSeconds(b.t));
  const first = sorted.findIndex((p) => series.some((s) => Number(p[s.key]) > 0));
  const from = first < 0 ? sorted.length - MIN_POINTS : Math.min(first - 1, sorted.length - MIN_POINTS);
  return sorted.slice(Math.max(0, from));
}
