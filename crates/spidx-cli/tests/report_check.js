// Checks every chart of a spidx report in the browser that renders it (used by
// tests/report_browser.rs, which appends this script to a copy of the report and reads the
// result from the dumped DOM). A problem is: a chart without a visible bar (or, in a line
// chart, a point), a text that overlaps another text or a bar, a text outside its chart, a
// font smaller than 10 px, a table wider than its place (it would scroll sideways: columns
// hidden behind a scroll bar), a page wider than the window.
// Boxes are the elements' own boxes (getBBox) carried through their transforms (getCTM),
// so rotated labels are compared as the rotated rectangles they are.
(function () {
  const problems = [];
  let charts = 0;
  let texts = 0;
  function corners(el) {
    const b = el.getBBox();
    const m = el.getCTM();
    return [
      [b.x, b.y],
      [b.x + b.width, b.y],
      [b.x + b.width, b.y + b.height],
      [b.x, b.y + b.height],
    ].map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  }
  // Separating-axis test for two convex quadrilaterals; `slack` pixels may overlap.
  function overlap(p, q, slack) {
    for (const poly of [p, q]) {
      for (let i = 0; i < 4; i++) {
        const [x1, y1] = poly[i];
        const [x2, y2] = poly[(i + 1) % 4];
        const len = Math.hypot(x2 - x1, y2 - y1) || 1;
        const nx = (y1 - y2) / len;
        const ny = (x2 - x1) / len;
        const proj = (pts) => pts.map(([x, y]) => x * nx + y * ny);
        const a = proj(p);
        const b = proj(q);
        if (Math.max(...a) - slack <= Math.min(...b) || Math.max(...b) - slack <= Math.min(...a)) {
          return false;
        }
      }
    }
    return true;
  }
  for (const svg of document.querySelectorAll("svg.chart")) {
    charts++;
    const title = svg.getAttribute("data-title");
    const vb = svg.viewBox.baseVal;
    const bars = [...svg.querySelectorAll(".bar")].filter((b) => {
      const r = b.getBBox();
      return r.width > 0.5 && r.height > 0.5;
    });
    // Line charts draw points instead of bars.
    const points = [...svg.querySelectorAll(".point")];
    if (bars.length === 0 && points.length === 0) problems.push("empty chart: " + title);
    const boxes = [...svg.querySelectorAll("text")].map((t) => [t.textContent, corners(t), t]);
    texts += boxes.length;
    const barBoxes = bars.map((b) => corners(b));
    for (const [s, c, t] of boxes) {
      if (parseFloat(getComputedStyle(t).fontSize) < 10) problems.push("small text in " + title + ": " + s);
      for (const [x, y] of c) {
        if (x < vb.x - 1 || y < vb.y - 1 || x > vb.x + vb.width + 1 || y > vb.y + vb.height + 1) {
          problems.push("text outside " + title + ": " + s);
          break;
        }
      }
      for (const b of barBoxes) {
        if (overlap(c, b, 1)) {
          problems.push("text over a bar in " + title + ": " + s);
          break;
        }
      }
    }
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        if (overlap(boxes[i][1], boxes[j][1], 1)) {
          problems.push("overlapping texts in " + title + ": " + boxes[i][0] + " / " + boxes[j][0]);
        }
      }
    }
  }
  // Tables: none may need a horizontal scroll at this window's width (the test opens a
  // 1366 px window, a common laptop's).
  let tables = 0;
  for (const table of document.querySelectorAll("table")) {
    tables++;
    const box = table.parentElement;
    const section = table.closest("section");
    const where = (section ? section.id : "page") + " (" + (table.rows[0] ? table.rows[0].textContent.slice(0, 60) : "") + ")";
    if (box.scrollWidth > box.clientWidth + 1) {
      problems.push("table scrolls horizontally in " + where + ": " + box.scrollWidth + " px in " + box.clientWidth + " px");
    } else if (table.getBoundingClientRect().right > document.documentElement.clientWidth + 1) {
      problems.push("table runs past the window in " + where);
    }
  }
  if (document.documentElement.scrollWidth > document.documentElement.clientWidth + 1) {
    problems.push("the page scrolls horizontally: " + document.documentElement.scrollWidth + " px in " + document.documentElement.clientWidth + " px");
  }
  const out = document.createElement("pre");
  out.id = "spidx-check";
  out.textContent = JSON.stringify({ charts, texts, tables, width: window.innerWidth, problems });
  document.body.appendChild(out);
})();
