// Line charts on uPlot (vendored under vendor/, MIT). A chart is drawn once its box has a width
// and follows the box's size afterwards.
import { h } from './dom.js';

const palette = ['#2f6fdf', '#e0782b', '#2a9d6a', '#c03b5b', '#7c5cc4', '#8c8c8c'];

// lineChart draws series over time. points: [{t: Date|ISO string|seconds, ...}] in any order;
// series: [{key, label, unit?}] picks the values. An empty points list shows a note instead.
export function lineChart(name, series, points, { height = 220, yLabel = '' } = {}) {
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
  const data = [rows.map((r) => r.t), ...series.map((s) => rows.map((r) => num(r.p[s.key])))];
  let plot = null;
  const opts = (width) => ({
    width,
    height,
    legend: { show: true },
    scales: { x: { time: true } },
    axes: [{}, { label: yLabel, size: 60 }],
    series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: palette[i % palette.length], width: 2, points: { show: rows.length < 3 } }))],
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

function num(v) {
  if (v === null || v === undefined) return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}
