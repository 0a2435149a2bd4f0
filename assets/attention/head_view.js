// Head view for one text: tokens in two columns (queries left, keys right), one line per
// (query, key, head) with opacity = attention weight. Hover a token to keep only its lines;
// click a head's swatch to show or hide it, double-click to show it alone. Written for this
// project (no library, no network); data arrive in window.PTX_ATTENTION:
//   {tokens: [T], attention: [L][H][T][T], layer: int, title: str, labels: {...}}
(function () {
  "use strict";
  const D = window.PTX_ATTENTION;
  const L = D.attention.length, H = D.attention[0].length, T = D.tokens.length;
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939",
                  "#8c6d31", "#843c39", "#7b4173", "#3182bd"];
  const color = (h) => COLORS[h % COLORS.length];
  const ROW = 20, TOP = 8, BOX_W = 130, GAP = 280, LEFT_X = 8;
  const RIGHT_X = LEFT_X + BOX_W + GAP;
  const WIDTH = RIGHT_X + BOX_W + 8, HEIGHT = TOP * 2 + ROW * T;
  const NS = "http://www.w3.org/2000/svg";
  let layer = Math.min(Math.max(D.layer || 0, 0), L - 1);
  let shown = new Array(H).fill(true);
  let focus = null; // {side: "q" | "k", index}

  const root = document.getElementById("ptx-head-view");
  root.innerHTML = "";
  const title = document.createElement("div");
  title.className = "hv-title";
  title.textContent = D.title;
  root.appendChild(title);

  const bar = document.createElement("div");
  bar.className = "hv-bar";
  const layerLabel = document.createElement("label");
  layerLabel.textContent = (D.labels.layer || "Layer") + " ";
  const select = document.createElement("select");
  for (let l = 0; l < L; l++) {
    const o = document.createElement("option");
    o.value = l; o.textContent = String(l);
    if (l === layer) o.selected = true;
    select.appendChild(o);
  }
  select.addEventListener("change", () => { layer = +select.value; draw(); });
  layerLabel.appendChild(select);
  bar.appendChild(layerLabel);
  const swatches = document.createElement("span");
  swatches.className = "hv-swatches";
  const headsLabel = document.createElement("span");
  headsLabel.textContent = " " + (D.labels.heads || "Heads") + ": ";
  bar.appendChild(headsLabel);
  for (let h = 0; h < H; h++) {
    const s = document.createElement("span");
    s.className = "hv-swatch";
    s.title = (D.labels.head || "head") + " " + h;
    s.textContent = String(h);
    s.style.background = color(h);
    s.addEventListener("click", () => { shown[h] = !shown[h]; draw(); });
    s.addEventListener("dblclick", () => { shown = shown.map((_, i) => i === h); draw(); });
    swatches.appendChild(s);
  }
  bar.appendChild(swatches);
  const all = document.createElement("button");
  all.textContent = D.labels.all || "all heads";
  all.addEventListener("click", () => { shown = new Array(H).fill(true); draw(); });
  bar.appendChild(all);
  const png = document.createElement("button");
  png.textContent = D.labels.png || "save PNG";
  png.addEventListener("click", savePng);
  bar.appendChild(png);
  root.appendChild(bar);

  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("width", WIDTH);
  svg.setAttribute("height", HEIGHT);
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${HEIGHT}`);
  root.appendChild(svg);
  const hint = document.createElement("div");
  hint.className = "hv-hint";
  hint.textContent = D.labels.hint || "";
  root.appendChild(hint);

  const y = (i) => TOP + ROW * i + ROW / 2;

  function el(name, attrs, text) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Token boxes are made once; hovering only restyles them and redraws the lines, so the
  // element under the pointer is never replaced (which would re-fire mouseenter).
  svg.appendChild(el("rect", {x: 0, y: 0, width: WIDTH, height: HEIGHT, fill: "#ffffff"}));
  const lines = el("g", {});
  svg.appendChild(lines);
  const boxes = {q: [], k: []};
  for (const side of ["q", "k"]) {
    const x = side === "q" ? LEFT_X : RIGHT_X;
    for (let i = 0; i < T; i++) {
      const g = el("g", {style: "cursor:pointer", "data-side": side, "data-index": i});
      const box = el("rect", {x, y: TOP + ROW * i + 1, width: BOX_W, height: ROW - 2, rx: 3});
      g.appendChild(box);
      g.appendChild(el("text", {x: side === "q" ? x + BOX_W - 6 : x + 6, y: y(i) + 5,
        "text-anchor": side === "q" ? "end" : "start", "font-size": 14,
        "font-family": "system-ui, Segoe UI, Helvetica, Arial, sans-serif", fill: "#0f172a"}, D.tokens[i]));
      g.addEventListener("mouseenter", () => { focus = {side, index: i}; draw(); });
      g.addEventListener("mouseleave", () => { focus = null; draw(); });
      svg.appendChild(g);
      boxes[side].push(box);
    }
  }

  function draw() {
    const swatchEls = document.querySelectorAll(".hv-swatch");
    for (let h = 0; h < H; h++) swatchEls[h].style.opacity = shown[h] ? 1 : 0.25;
    for (const side of ["q", "k"]) {
      boxes[side].forEach((box, i) => {
        const active = focus && focus.side === side && focus.index === i;
        box.setAttribute("fill", active ? "#e0e7ff" : "#f8fafc");
        box.setAttribute("stroke", active ? "#4338ca" : "#e2e8f0");
      });
    }
    while (lines.firstChild) lines.removeChild(lines.firstChild);
    const nShown = shown.filter(Boolean).length || 1;
    for (let h = 0; h < H; h++) {
      if (!shown[h]) continue;
      const A = D.attention[layer][h];
      for (let i = 0; i < T; i++) {
        if (focus && focus.side === "q" && focus.index !== i) continue;
        for (let j = 0; j < T; j++) {
          if (focus && focus.side === "k" && focus.index !== j) continue;
          const w = A[i][j];
          if (w < 0.01) continue;
          lines.appendChild(el("line", {
            x1: LEFT_X + BOX_W, y1: y(i), x2: RIGHT_X, y2: y(j), stroke: color(h),
            "stroke-width": 2, "stroke-opacity": Math.min(1, w * (focus ? 1.2 : 1.5 / Math.sqrt(nShown))),
          }));
        }
      }
    }
  }

  function savePng() {
    const data = new XMLSerializer().serializeToString(svg);
    const img = new Image();
    img.onload = () => {
      const c = document.createElement("canvas");
      c.width = WIDTH * 2; c.height = HEIGHT * 2;
      const ctx = c.getContext("2d");
      ctx.scale(2, 2);
      ctx.drawImage(img, 0, 0);
      const a = document.createElement("a");
      a.download = `head_view_layer${layer}.png`;
      a.href = c.toDataURL("image/png");
      document.body.appendChild(a); a.click(); a.remove();
    };
    img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(data);
  }

  draw();
})();
